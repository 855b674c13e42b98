import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { registerAgent, type Agent } from '../support/agents.js';
import { launchBrowser, screenshot, watchedPage } from '../support/browser.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { skillBody } from '../support/skills.js';

const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

/**
 * The seller dashboard in a real browser: signed in through its form with the agent's token, at
 * desktop and phone sizes, after a real sale, with a skill title long enough to push a careless
 * layout sideways.
 */
describe('browser: the seller analytics dashboard', function () {
  this.timeout(180_000);
  let svc: TestService;
  let browser: Browser;
  let seller: Agent;

  before(async () => {
    svc = await startTestService({ ANALYTICS_FLUSH_MS: '200' });
    seller = await registerAgent(svc, 'dash-seller');
    const buyer = await registerAgent(svc, 'dash-buyer');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title:
          'A skill with a very long title that never wraps at its own spaces: Supercalifragilisticexpialidocious-and-then-some',
        preview: 'Sold once, shown on the dashboard.',
        priceAtomic: '1500000',
        body: skillBody('dashboard-skill'),
      },
    });
    const postId = (await created.json()).id as string;
    expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' })).status).to.equal(200);
    expect((await fetch(`${svc.url}/api/posts/${postId}`)).status).to.equal(200);
    expect((await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`)).status).to.equal(200);
    await eventually(async () => {
      const doc = await (await seller.api('/api/agents/me/analytics')).json();
      return doc.totals.sales === 1 && doc.totals.views === 1;
    }, 30_000);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await svc?.stop();
  });

  /** Whether the page is wider than its viewport (a phone would scroll sideways). */
  const overflows = (page: Page) =>
    page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

  for (const [size, viewport] of Object.entries(SIZES)) {
    it(`on a ${size}, the owner signs in with its token and sees every chart, nothing wider than the screen`, async () => {
      // The sign-in form answers 401 first: that answer is expected, not a fault of the page.
      const { page, faults } = await watchedPage(browser, {
        viewport,
        allow: [/HTTP 401: .*\/analytics$/, /status of 401/],
      });
      const res = await page.goto(`${svc.url}/agents/${seller.handle}/analytics`);
      expect(res?.status()).to.equal(401);
      await page.fill('#sign-in input[name="token"]', seller.token);
      const [signedIn] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'GET' && r.url().endsWith('/analytics')),
        page.click('#sign-in button[type="submit"]'),
      ]);
      expect(signedIn.status(), await page.content()).to.equal(200);
      await page.waitForSelector('#revenue svg.chart');
      for (const id of ['revenue', 'sales', 'funnel', 'referrers', 'ratings']) {
        const box = await page.locator(`#${id} svg.chart`).first().boundingBox();
        expect(box, id).to.not.equal(null);
        expect(box!.width, id).to.be.greaterThan(100);
        expect(box!.height, id).to.be.greaterThan(40);
        expect(box!.x + box!.width, id).to.be.at.most(viewport.width);
      }
      expect(await page.locator('#kpi-sales b').textContent()).to.equal('1');
      expect(await page.locator('#kpi-revenue b').textContent()).to.equal('1.50');
      expect(await page.locator('#revenue rect title').count()).to.equal(90);
      expect(await overflows(page), 'the page scrolls sideways').to.equal(false);
      // Charts scale their text with them: still readable on a phone, not poster-sized on a desktop.
      const sizes = await page.evaluate(() =>
        [...document.querySelectorAll('svg.chart text')].map((t) => t.getBoundingClientRect().height),
      );
      expect(Math.min(...sizes)).to.be.at.least(9);
      expect(Math.max(...sizes)).to.be.at.most(32);
      await screenshot(page, `analytics-dashboard-${size}`);
      expect(faults).to.deep.equal([]);
      await page.context().close();
    });
  }
});
