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
    const site = svc.url.replace('127.0.0.1', 'localhost');
    // Three commands, as the README walk-through runs them: register, search, install with that agent.
    expect(steps).to.deep.equal([
      `npx skill-market --url ${site} register my-agent`,
      `npx skill-market --url ${site} search weather`,
      `npx skill-market --url ${site} install my-agent ${postId} --max-price 1.25`,
    ]);
    await screenshot(page, 'page-home');
    expect(faults).to.deep.equal([]);
  });

  it("the agent page shows the agent's name, score, checklist, skills and every badge as an image", async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(`${svc.url}/agents/${handle}`);
    expect(await page.textContent('h1')).to.equal('Browser Seller');
    expect(await page.textContent('#score')).to.match(/^\d+\.\d\d$/);
    expect(await page.locator('#checklist li').count()).to.equal(10);
    expect(await page.locator('#checklist').textContent()).to.contain('How to fix, with the client:');
    await page.locator(`#skills a[href="/skills/${postId}"]`).waitFor();
    await page.waitForFunction(() => [...document.images].every((i) => i.complete));
    const badges = await page.$$eval('img[data-kind]', (imgs) =>
      (imgs as HTMLImageElement[]).map((i) => ({ kind: i.dataset.kind, width: i.naturalWidth })),
    );
    expect(badges.map((b) => b.kind)).to.deep.equal([...BADGE_KINDS]);
    for (const b of badges) expect(b.width, b.kind).to.be.greaterThan(0);
    // One snippet per format holding every badge, each shown whole (wrapped) with its Copy button.
    expect(await page.locator('textarea').count()).to.equal(0);
    const markdown = page.locator('#badges pre[data-format="markdown"]');
    expect(await page.locator('#badges pre').count()).to.equal(2);
    expect((await markdown.textContent())?.split('\n')).to.have.length(BADGE_KINDS.length);
    expect(await page.locator('#badges .snippet button:visible').allTextContents()).to.deep.equal(['Copy', 'Copy']);
    // A checklist fix names the client's command first, then the HTTP call.
    const fix = page.locator('#checklist li[data-item="contact-method"] .fix');
    expect(await fix.locator('pre').textContent()).to.equal(
      `npx skill-market profile ${handle} --contact-email agent@example.com`,
    );
    expect(await fix.textContent()).to.match(/with the client:.*Or over HTTP: PATCH \/api\/agents\/me/s);
    // The embed card as other sites show it: the real card, framed from this site.
    const card = page.frameLocator('#embed iframe');
    expect(await card.locator('h1').textContent()).to.contain('Browser Seller');
    expect(await page.locator('#embed pre[data-format="iframe"]').textContent()).to.contain(
      `/api/agents/${handle}/card`,
    );
    await screenshot(page, 'page-agent');
    expect(faults).to.deep.equal([]);
  });

  it('the skill page shows the description, an excerpt of the preview, sales and buyers, the seller, the price, the digest and how to buy', async () => {
    const { page, faults } = await watchedPage(browser);
    await page.goto(`${svc.url}/skills/${postId}`);
    expect(await page.textContent('h1')).to.equal('Hello skill for greetings');
    expect(await page.textContent('#description')).to.equal('Greets people.');
    expect(await page.textContent('#preview')).to.equal('Greets people warmly in their own language.');
    expect(await page.textContent('#sales')).to.match(/^1 sale to 1 buyer /);
    // The seller's score and health as they are now: its embed card, framed.
    const card = await page.frameLocator('#seller iframe').locator('body').textContent();
    expect(card).to.match(/score \d+\.\d(healthy|degraded|dormant)/);
    expect(await page.textContent('#price')).to.contain('1.25 USDC');
    expect(await page.textContent('#digest')).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(await page.textContent('#install-command')).to.equal(
      `npx skill-market install <your-handle> ${postId} --max-price 1.25`,
    );
    await screenshot(page, 'page-skill');
    expect(faults).to.deep.equal([]);
  });

  it("a snippet's Copy button puts the whole command on the clipboard; without scripts a click selects all of it", async () => {
    const context = await browser.newContext({ viewport: PHONE });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
    const { page, faults } = await watchedPage(browser, { context });
    await page.goto(`${svc.url}/skills/${postId}`);
    const snippet = page.locator('.snippet', { has: page.locator('#install-command') });
    await snippet.locator('button').click();
    await page.waitForFunction(() => document.querySelector('#install-command + button')?.textContent === 'Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(
      `npx skill-market install <your-handle> ${postId} --max-price 1.25`,
    );
    expect(faults).to.deep.equal([]);
    await context.close();

    const still = await browser.newContext({ javaScriptEnabled: false });
    const bare = await still.newPage();
    await bare.goto(`${svc.url}/skills/${postId}`);
    expect(await bare.locator('#install-command + button').isVisible()).to.equal(false);
    await bare.click('#install-command');
    expect(await bare.evaluate(() => String(window.getSelection()))).to.equal(
      `npx skill-market install <your-handle> ${postId} --max-price 1.25`,
    );
    await still.close();
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
