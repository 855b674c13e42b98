import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { BADGE_KINDS, BADGE_STYLES } from '../../src/documents/agent/badge.renderer.js';
import { EMBED_CARD_SIZE, embedCardSnippet } from '../../src/documents/agent/embed-card.renderer.js';
import { registerAgent } from '../support/agents.js';
import { launchBrowser, screenshot, watchedPage } from '../support/browser.js';
import { eventually, startTestService, type TestService } from '../support/service.js';

/**
 * What a person sees of an agent on another site: the embed card in a cross-origin iframe and every
 * badge as an image; and what an operator sees: the queue dashboard behind the admin token.
 */
describe('browser: embeds, badges and the queue dashboard', function () {
  this.timeout(120_000);
  let svc: TestService;
  let browser: Browser;
  let host: Server;
  let hostUrl: string;
  /** The service under another origin than the host page's (localhost vs 127.0.0.1). */
  let market: string;
  const handle = 'embed-owner';

  before(async () => {
    svc = await startTestService();
    market = svc.url.replace('127.0.0.1', 'localhost');
    const agent = await registerAgent(svc, handle);
    const patched = await agent.api('/api/agents/me', {
      method: 'PATCH',
      json: {
        displayName: 'Embed Owner with a rather long display name that must not break the card',
        bio: `Extracts tables from PDFs. ${'A long bio keeps going so that it would need a scrollbar. '.repeat(6)}`,
      },
    });
    expect(patched.status).to.equal(200);
    await eventually(async () => {
      const card = await fetch(`${svc.url}/api/agents/${handle}/card`);
      return card.status === 200 && (await card.text()).includes('rather long display name');
    });
    // A page on another origin embedding the card at its documented size and every badge.
    const badges = BADGE_KINDS.flatMap((kind) =>
      BADGE_STYLES.map(
        (style) =>
          `<img class="badge" alt="${kind} ${style}" src="${market}/api/agents/${handle}/badge.svg?kind=${kind}&style=${style}">`,
      ),
    ).join('\n');
    const html = `<!doctype html><html><head><title>A blog</title></head><body>
<h1>My favourite agent</h1>${embedCardSnippet(market, handle)}
<div id="narrow" style="width:300px"><iframe id="small" src="${market}/api/agents/${handle}/card" width="300" height="${EMBED_CARD_SIZE.height}" style="border:0"></iframe></div>
${badges}</body></html>`;
    host = createServer((req, res) => {
      if (req.url === '/favicon.ico') return res.writeHead(204).end();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}/`;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => host?.close(resolve));
    await svc?.stop();
  });

  it('the embed card shows in a cross-origin iframe at its documented size and narrower, without scrolling', async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(hostUrl);
    for (const [selector, width] of [
      ['iframe[title]', EMBED_CARD_SIZE.width],
      ['#small', 300],
    ] as const) {
      const frame = await (await page.waitForSelector(selector)).contentFrame();
      expect(frame, selector).to.not.equal(null);
      await frame!.waitForSelector('h1');
      expect(await frame!.textContent('h1')).to.contain('Embed Owner');
      const size = await frame!.evaluate(() => ({
        scrollWidth: document.documentElement.scrollWidth,
        scrollHeight: document.documentElement.scrollHeight,
        clientWidth: document.documentElement.clientWidth,
        clientHeight: document.documentElement.clientHeight,
        link: document.querySelector('a')?.getBoundingClientRect().bottom ?? Infinity,
      }));
      expect(size.clientWidth, `${selector} width`).to.equal(width);
      expect(size.scrollWidth, `${selector} scrolls sideways`).to.be.at.most(size.clientWidth);
      expect(size.scrollHeight, `${selector} scrolls`).to.be.at.most(size.clientHeight);
      expect(size.link, `${selector}: the link is inside the frame`).to.be.at.most(EMBED_CARD_SIZE.height);
      const link = await frame!.$('a');
      expect(await link!.getAttribute('href')).to.match(new RegExp(`/agents/${handle}$`));
      expect(await link!.getAttribute('target')).to.equal('_blank');
    }
    await screenshot(page, 'embed-card-cross-origin');
    expect(faults).to.deep.equal([]);
  });

  it('every badge kind and style renders as an image', async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(hostUrl);
    await page.waitForFunction(() => [...document.images].every((i) => i.complete));
    const images = await page.$$eval('img.badge', (imgs) =>
      (imgs as HTMLImageElement[]).map((i) => ({ alt: i.alt, width: i.naturalWidth, height: i.naturalHeight })),
    );
    expect(images).to.have.length(BADGE_KINDS.length * BADGE_STYLES.length);
    for (const img of images) {
      expect(img.width, img.alt).to.be.greaterThan(40);
      expect(img.height, img.alt).to.be.within(14, 40);
    }
    await screenshot(page, 'badges');
    expect(faults).to.deep.equal([]);
  });

  it('the queue dashboard opens with the admin token and lists the queues', async () => {
    const refused = await fetch(`${svc.url}/admin/queues`);
    expect(refused.status).to.equal(401);
    // Basic auth sent with every request, as a script does: a browser without it gets the
    // sign-in form instead of a challenge (the next test).
    const basic = Buffer.from(`operator:${svc.adminToken}`).toString('base64');
    const context = await browser.newContext({ extraHTTPHeaders: { authorization: `Basic ${basic}` } });
    try {
      // The dashboard's page names a third-party font stylesheet; its content policy refuses it
      // (the browser says so), so nothing leaves for another host and the page uses system fonts.
      const refusedFonts = [
        /request failed: https:\/\/fonts\.googleapis\.com\/\S* \(csp\)/,
        /the stylesheet 'https:\/\/fonts\.googleapis\.com\/[^']*' violates the following Content Security Policy/,
      ];
      const { page, faults } = await watchedPage(browser, { context, allow: refusedFonts });
      const elsewhere: string[] = [];
      page.on('response', (r) => {
        if (new URL(r.url()).origin !== new URL(svc.url).origin) elsewhere.push(r.url());
      });
      await page.goto(`${svc.url}/admin/queues`);
      for (const queue of ['documents', 'payments']) await page.getByRole('link', { name: queue }).first().waitFor();
      // The registration above queued document and payment jobs: the dashboard counts them.
      await page
        .getByText(/\d+ Jobs?/)
        .first()
        .waitFor();
      await screenshot(page, 'queue-dashboard');
      expect(faults).to.deep.equal([]);
      expect(elsewhere, 'answers from other hosts').to.deep.equal([]);
    } finally {
      await context.close();
    }
  });

  it('an operator opens the dashboard in a browser, signs in through the form with the admin token, and sees the queues', async () => {
    const refusedFonts = [
      /request failed: https:\/\/fonts\.googleapis\.com\/\S* \(csp\)/,
      /the stylesheet 'https:\/\/fonts\.googleapis\.com\/[^']*' violates the following Content Security Policy/,
    ];
    // The form answers 401 until signed in, and once with a wrong token.
    const { page, faults } = await watchedPage(browser, {
      allow: [...refusedFonts, /HTTP 401: .*\/admin\/queues/, /status of 401 \(Unauthorized\)/],
    });
    await page.goto(`${svc.url}/admin/queues`);
    expect(await page.textContent('h1')).to.equal('Queue dashboard');
    await page.fill('input[name="token"]', 'a wrong guess');
    await Promise.all([page.waitForURL(/\/admin\/queues\/sign-in$/), page.click('button[type="submit"]')]);
    expect(await page.textContent('#sign-in-error')).to.equal('That is not the admin token.');
    await screenshot(page, 'queue-dashboard-sign-in-error');
    await page.fill('input[name="token"]', svc.adminToken);
    await Promise.all([page.waitForURL(/\/admin\/queues\/$/), page.click('button[type="submit"]')]);
    for (const queue of ['documents', 'payments']) await page.getByRole('link', { name: queue }).first().waitFor();
    const [session] = await page.context().cookies(`${svc.url}/admin/queues/`);
    expect(session).to.deep.include({ httpOnly: true, sameSite: 'Strict', path: '/admin/queues' });
    expect(session?.value).to.not.contain(svc.adminToken);
    await screenshot(page, 'queue-dashboard-signed-in');
    expect(faults).to.deep.equal([]);
    await page.context().close();
  });
});
