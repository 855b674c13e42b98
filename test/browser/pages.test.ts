import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { BADGE_KINDS } from '../../src/documents/agent/badge.renderer.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { registerAgent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { launchBrowser, screenshot, watchedPage } from '../support/browser.js';
import { eventually, startTestService, type TestService } from '../support/service.js';

const PHONE = { width: 390, height: 844 };

/** What a person sees of the marketplace in a browser: the home, agent, skill and search pages. */
describe('browser: the pages for people', function () {
  this.timeout(120_000);
  let svc: TestService;
  let browser: Browser;
  let postId: string;
  const handle = 'browser-seller';

  before(async () => {
    svc = await startTestService();
    const seller = await registerAgent(svc, handle);
    const patched = await seller.api('/api/agents/me', {
      method: 'PATCH',
      json: { displayName: 'Browser Seller', bio: 'Writes greeting skills that agents buy and install in seconds.' },
    });
    expect(patched.status).to.equal(200);
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Hello skill for greetings',
        preview: 'Greets people warmly in their own language.',
        priceAtomic: '1250000',
        tags: ['greetings'],
        body: {
          files: [{ path: 'SKILL.md', content: '---\nname: hello-skill\ndescription: Greets people.\n---\n# Hello\n' }],
        },
      },
    });
    postId = (await created.json()).id;
    await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' });
    const buyer = await newBuyer(svc.service.runtime.chain);
    expect((await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`)).status).to.equal(200);
    await populationStatsJob.run(jobContext(svc.service.runtime), {});
    const store = svc.service.runtime.store;
    await eventually(async () => (await store.get(`agents/${handle}`))?.body.toString().includes(postId), 20_000);
    await eventually(async () => (await store.get('index.html'))?.body.toString().includes(postId), 20_000);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await svc?.stop();
  });

  /** Whether the page is wider than its viewport (a phone would scroll sideways). */
  const scrollsSideways = (page: Page) =>
    page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

  it('the home page says what the marketplace is and lists the trending agent and the newest skill', async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(`${svc.url}/`);
    expect(await page.textContent('h1')).to.contain('Skills for software agents');
    await page.locator(`a[href="/agents/${handle}"]`).first().waitFor();
    await page.locator(`a[href="/skills/${postId}"]`).first().waitFor();
    expect(await page.getByRole('heading', { name: 'Trending tags' }).isVisible()).to.equal(true);
    const steps = await page.locator('#start pre').allTextContents();
    expect(steps.map((c) => c.split(' ')[4])).to.deep.equal(['register', 'search', 'install']);
    await screenshot(page, 'page-home');
    expect(faults).to.deep.equal([]);
  });

  it("the agent page shows the agent's name, score, checklist, skills and every badge as an image", async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(`${svc.url}/agents/${handle}`);
    expect(await page.textContent('h1')).to.equal('Browser Seller');
    expect(await page.textContent('#score')).to.match(/^\d+\.\d\d$/);
    expect(await page.locator('#checklist li').count()).to.equal(10);
    expect(await page.locator('#checklist').textContent()).to.contain('How to fix:');
    await page.locator(`#skills a[href="/skills/${postId}"]`).waitFor();
    await page.waitForFunction(() => [...document.images].every((i) => i.complete));
    const badges = await page.$$eval('img[data-kind]', (imgs) =>
      (imgs as HTMLImageElement[]).map((i) => ({ kind: i.dataset.kind, width: i.naturalWidth })),
    );
    expect(badges.map((b) => b.kind)).to.deep.equal([...BADGE_KINDS]);
    for (const b of badges) expect(b.width, b.kind).to.be.greaterThan(0);
    // One selectable snippet per badge and format, shown whole (wrapped), no truncating text area.
    expect(await page.locator('textarea').count()).to.equal(0);
    expect(await page.locator('.badge pre.copy').count()).to.equal(BADGE_KINDS.length * 2);
    // A checklist fix names the client's command first, then the HTTP call.
    expect(await page.locator('#checklist pre.copy').allTextContents()).to.satisfy((cmds: string[]) =>
      cmds.some((c) => c.startsWith(`npx skill-market profile ${handle} `)),
    );
    await screenshot(page, 'page-agent');
    expect(faults).to.deep.equal([]);
  });

  it('the skill page shows the price, the digest and how to buy', async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(`${svc.url}/skills/${postId}`);
    expect(await page.textContent('h1')).to.equal('Hello skill for greetings');
    expect(await page.textContent('#price')).to.contain('1.25 USDC');
    expect(await page.textContent('#digest')).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(await page.locator('pre').allTextContents()).to.satisfy((pres: string[]) =>
      pres.some((p) => p.includes(`npx skill-market install <your-handle> ${postId} --max-price 1.25`)),
    );
    await screenshot(page, 'page-skill');
    expect(faults).to.deep.equal([]);
  });

  it('the search form finds the skill and opens its page', async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(`${svc.url}/`);
    await page.fill('input[name="q"]', 'greeting');
    await Promise.all([page.waitForURL(/\/search\?q=greeting$/), page.press('input[name="q"]', 'Enter')]);
    await page.locator(`#results a[href="/skills/${postId}"]`).waitFor();
    await screenshot(page, 'page-search');
    await Promise.all([
      page.waitForURL(new RegExp(`/skills/${postId}$`)),
      page.click(`#results a[href="/skills/${postId}"]`),
    ]);
    expect(await page.textContent('h1')).to.equal('Hello skill for greetings');
    expect(faults).to.deep.equal([]);
  });

  it('on a phone (390×844) no page scrolls sideways', async () => {
    const { page, faults } = await watchedPage(browser, { viewport: PHONE });
    for (const [name, path] of [
      ['home', '/'],
      ['agent', `/agents/${handle}`],
      ['skill', `/skills/${postId}`],
      ['search', '/search?q=greeting'],
    ] as const) {
      await page.goto(`${svc.url}${path}`);
      await page.waitForFunction(() => [...document.images].every((i) => i.complete));
      expect(await scrollsSideways(page), path).to.equal(false);
      await screenshot(page, `page-${name}-phone`);
    }
    expect(faults).to.deep.equal([]);
  });
});
