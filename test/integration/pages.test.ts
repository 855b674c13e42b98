import { expect } from 'chai';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { PAGE_CSP, PAGE_SCRIPT_PATH } from '../../src/documents/pages/layout.js';

const SCRIPT = '<script>alert(1)</script>';
const BREAKOUT = '"><img src=x onerror=alert(1)>';

/** An Agent Skill whose title and preview carry markup an attacker would try. */
const hostileSkill = {
  title: `Hello skill ${SCRIPT}`,
  preview: `Greets people warmly, in any language. ${BREAKOUT}`,
  priceAtomic: '1250000',
  tags: ['greetings'],
  body: {
    files: [
      {
        path: 'SKILL.md',
        content: '---\nname: hello-skill\ndescription: Greets people warmly.\n---\n# Hello skill\nSay hello.\n',
      },
    ],
  },
};

/** No markup from agent text survives: it is all shown as text. */
function expectEscaped(page: string) {
  // The page's one script is the site's own file; any other script element came from agent text.
  const html = page.replace(`<script src="${PAGE_SCRIPT_PATH}" defer></script>`, '');
  expect(html.toLowerCase()).to.not.contain('<script');
  expect(html).to.not.contain('<img src=x');
  expect(html).to.not.contain('onerror=alert(1)>');
}

describe('pages for people: home, agent, skill and search pages, published and served', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let postId: string;
  const store = () => svc.service.runtime.store;
  const page = (path: string, accept = 'text/html') => fetch(`${svc.url}${path}`, { headers: { accept } });
  const stored = async (key: string) => (await store().get(key))?.body.toString('utf8');

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'page-seller');
    const patched = await seller.api('/api/agents/me', {
      method: 'PATCH',
      json: { displayName: SCRIPT, bio: `Writes greeting skills for agents. ${BREAKOUT}` },
    });
    expect(patched.status).to.equal(200);
    const created = await seller.api('/api/posts', { method: 'POST', json: hostileSkill });
    expect(created.status).to.equal(201);
    postId = (await created.json()).id;
    expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' })).status).to.equal(200);
    const buyer = await newBuyer(svc.service.runtime.chain);
    expect((await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`)).status).to.equal(200);
    // The seller buys its own skill: a sale no page counts.
    expect((await seller.payV2(`${svc.url}/api/posts/${postId}?view=full`)).status).to.equal(200);
    // The rankings and the search vocabulary, as the 15-minute job refreshes them.
    await populationStatsJob.run(jobContext(svc.service.runtime), {});
  });
  after(async () => svc?.stop());

  it('the home page lists the trending agent and the newest skill after a sale and a recompute, in the bucket and at /', async () => {
    const html = await eventually(async () => {
      const body = await stored('index.html');
      return body?.includes(`/skills/${postId}`) && body.includes('/agents/page-seller') ? body : undefined;
    }, 20_000);
    expect(html).to.contain('Trending agents');
    expectEscaped(html);
    const res = await page('/');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.equal(PAGE_CSP);
    const served = await res.text();
    expect(served).to.contain(`/skills/${postId}`);
    expect(served).to.contain('<form class="search" action="/search" method="get"');
  });

  it("the agent page is published with the agent's documents: score, four dimensions, checklist, badges, embed snippet, skills; agent text escaped", async () => {
    const html = await eventually(async () => {
      const body = await stored('agents/page-seller');
      return body?.includes(`/skills/${postId}`) && body.includes('&lt;script&gt;') ? body : undefined;
    }, 20_000);
    expectEscaped(html);
    expect(html).to.contain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).to.contain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;');
    for (const dimension of ['Transparency', 'Reliability', 'Reputation', 'Ecosystem'])
      expect(html).to.contain(dimension);
    expect(html).to.contain('How to fix, with the client:');
    for (const kind of ['buyers', 'skills', 'verified']) expect(html).to.contain(`/badge.svg?kind=${kind}`);
    expect(html).to.contain('width=&quot;520&quot; height=&quot;160&quot;');
    const res = await page('/agents/page-seller');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.equal(PAGE_CSP);
    // What is served is the published page: the same bytes as the bucket's copy (read again, as the
    // agent's documents may have been recomputed since the copy above was read).
    await eventually(
      async () => (await (await page('/agents/page-seller')).text()) === (await stored('agents/page-seller')),
      20_000,
    );
  });

  it("the skill page is published again after a sale: its description, sales and buyers without the seller's own, the seller's live card", async () => {
    const db = svc.service.runtime.database.db;
    await eventually(async () => {
      const rows = await db.selectFrom('purchases').select('id').where('post_id', '=', postId).execute();
      return rows.length === 2 ? true : undefined;
    }, 20_000);
    // Served as published (the page the workers put in the bucket, as the edge serves it): sales
    // gather for up to 5 s before the page is published again with them.
    const served = await eventually(async () => {
      const html = await (await page(`/skills/${postId}`)).text();
      return html.includes('<strong>1 sale</strong> to <strong>1 buyer</strong>') ? html : undefined;
    }, 20_000);
    expect(served).to.contain('<p id="description"><strong>Greets people warmly.</strong></p>');
    // The seller's score and health: its embed card, live.
    expect(served).to.contain('<iframe class="embed-preview" src="/api/agents/page-seller/card"');
    // The published page catches up with the last sale (the seller's score may move on its own).
    const sales = (html: string | undefined) => /<p id="sales">.*?<\/p>/.exec(html ?? '')?.[0];
    expect(sales(served)).to.be.a('string');
    await eventually(
      async () => (sales(await stored(`skills/${postId}`)) === sales(served) ? true : undefined),
      20_000,
    );
  });

  it('the skill page is published with the manifest: price exact, version, skill digest, how to buy with curl, the installer and MCP', async () => {
    const html = await eventually(() => stored(`skills/${postId}`), 20_000);
    expectEscaped(html);
    expect(html).to.contain('Hello skill &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).to.contain('1.25 USDC');
    expect(html).to.contain('href="/agents/page-seller"');
    const manifest = await (await page(`/api/posts/${postId}/manifest.json`, 'application/json')).json();
    expect(html).to.contain(manifest.integrity.skillDigest);
    expect(manifest.integrity.skillDigest).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(html).to.contain('<code>hello-skill</code>');
    expect(html).to.contain('PAYMENT-SIGNATURE');
    expect(html).to.contain(`npx skill-market install &lt;your-handle&gt; ${postId} --max-price 1.25`);
    expect(html).to.contain('buy_skill');
    const res = await page(`/skills/${postId}`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.equal(PAGE_CSP);
  });

  it('the search page finds the skill with a link to its page, and corrects "helo skil"', async () => {
    const found = await page('/search?q=greeting');
    expect(found.status).to.equal(200);
    expect(found.headers.get('content-security-policy')).to.equal(PAGE_CSP);
    expect(found.headers.get('cache-control')).to.equal('public, max-age=30, stale-while-revalidate=120');
    const html = await found.text();
    expect(html).to.contain(`href="/skills/${postId}"`);
    expectEscaped(html);
    const typo = await (await page('/search?q=helo%20skil')).text();
    expect(typo).to.contain('id="did-you-mean"');
    expect(typo).to.match(/Did you mean <a href="\/search\?q=hello%20skill"><strong>hello skill<\/strong><\/a>\?/);
    expectEscaped(typo);
  });

  it('an empty query shows the box and suggestions; a query out of bounds is a page saying why', async () => {
    const empty = await page('/search');
    expect(empty.status).to.equal(200);
    const box = await empty.text();
    expect(box).to.contain('name="q"');
    expect(box).to.contain('href="/search?q=greetings"');
    const short = await page('/search?q=a');
    expect(short.status).to.equal(400);
    expect(short.headers.get('content-type')).to.match(/^text\/html/);
    expect(await short.text()).to.contain('Type at least 2 characters to search.');
    const long = await page(`/search?q=${'x'.repeat(201)}`);
    expect(long.status).to.equal(400);
    expect(await long.text()).to.contain('A search is at most 200 characters');
  });

  it('an unknown agent or skill is a 404 page for people (problem+json for programs), and the API paths keep problem+json', async () => {
    const agent = await page('/agents/nobody-here');
    expect(agent.status).to.equal(404);
    expect(agent.headers.get('content-type')).to.match(/^text\/html/);
    expect(agent.headers.get('content-security-policy')).to.equal(PAGE_CSP);
    expect(await agent.text()).to.contain('Agent not found');
    const skill = await page('/skills/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6');
    expect(skill.status).to.equal(404);
    expect(await skill.text()).to.contain('Skill not found');
    const program = await page('/agents/nobody-here', 'application/json');
    expect(program.status).to.equal(404);
    expect((await program.json()).code).to.equal('agent_not_found');
    const unknown = await page('/no-such-page');
    expect(unknown.status).to.equal(404);
    expect(unknown.headers.get('content-type')).to.match(/^text\/html/);
    expect(await unknown.text()).to.contain('Page not found');
    const asJson = await page('/no-such-page', 'application/json');
    expect(asJson.headers.get('content-type')).to.match(/^application\/problem\+json/);
    const api = await page('/api/agents/nobody-here/score.json');
    expect(api.status).to.equal(404);
    expect(api.headers.get('content-type')).to.match(/^application\/problem\+json/);
  });

  it('an unpublished skill loses its page', async () => {
    expect((await seller.api(`/api/posts/${postId}/unpublish`, { method: 'POST' })).status).to.equal(200);
    await eventually(async () => (await stored(`skills/${postId}`)) === undefined, 20_000);
    // The API's edge keeps a fetched object a second, as a CDN would for its TTL.
    await eventually(async () => (await page(`/skills/${postId}`)).status === 404, 5_000);
  });
});
