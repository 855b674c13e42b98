import { expect } from 'chai';
import { sql } from 'kysely';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer, x402Payer, type Buyer } from '../support/buyers.js';
import { buyOverMcp, connectMcp } from '../support/mcp.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { skillBody } from '../support/skills.js';
import { ANALYTICS_COOKIE } from '../../src/api/routes/analytics.routes.js';
import { runDemo } from '../../scripts/demo/marketplace.js';
import { refreshAgentAnalytics } from '../../src/domain/analytics/analytics.use-cases.js';

interface Doc {
  handle: string;
  totals: {
    sales: number;
    revenueAtomic: string;
    views: number;
    challenges: number;
    delivered: number;
    attempts: number;
  };
  funnel: Array<{
    postId: string;
    views: number;
    challenges: number;
    attempts: number;
    settled: number;
    delivered: number;
    revenueAtomic: string;
  }>;
  daily: Array<{ day: string; sales: number; revenueAtomic: string }>;
  buyers: { total: number; new: number; repeat: number };
  referrers: Array<{ source: string; views: number; challenges: number }>;
}

/**
 * Seller analytics end to end: real purchases over x402 through the service, counted views and
 * challenges flushed by the API, the analytics job run by the worker, and the private document and
 * dashboard read with the seller's own token only.
 */
describe('seller analytics: the document matches the ledger, and only its agent reads it', function () {
  this.timeout(180_000);
  let svc: TestService;
  let seller: Agent;
  let rival: Agent;
  let walletBuyer: Buyer;
  const skills: Record<'alpha' | 'beta', string> = { alpha: '', beta: '' };

  const publish = async (title: string, priceAtomic: string) => {
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title,
        preview: `${title}: a skill sold in the analytics test.`,
        priceAtomic,
        body: skillBody(title.toLowerCase()),
      },
    });
    expect(created.status).to.equal(201);
    const id = (await created.json()).id as string;
    expect((await seller.api(`/api/posts/${id}/publish`, { method: 'POST' })).status).to.equal(200);
    return id;
  };
  const analytics = async (agent: Agent): Promise<Doc> => (await agent.api('/api/agents/me/analytics')).json();

  before(async () => {
    svc = await startTestService({ ANALYTICS_FLUSH_MS: '200' });
    seller = await registerAgent(svc, 'chart-seller');
    rival = await registerAgent(svc, 'chart-rival');
    walletBuyer = await newBuyer(svc.service.runtime.chain);
    skills.alpha = await publish('Alpha', '750000');
    skills.beta = await publish('Beta', '1250000');
    // Three previews found through the search page, one read straight.
    for (let i = 0; i < 3; i++)
      expect(
        (await fetch(`${svc.url}/api/posts/${skills.alpha}`, { headers: { referer: `${svc.url}/search?q=alpha` } }))
          .status,
      ).to.equal(200);
    expect((await fetch(`${svc.url}/api/posts/${skills.beta}`)).status).to.equal(200);
    // Every purchase sees its 402 first (the official client pays it), so each is a challenge too.
    for (const [buyer, post] of [
      [rival.payV2, skills.alpha],
      [rival.payV2, skills.beta],
      [walletBuyer.payV2, skills.alpha],
    ] as const) {
      const paid = await buyer(`${svc.url}/api/posts/${post}?view=full`);
      expect(paid.status, await paid.clone().text()).to.equal(200);
    }
  });
  after(async () => svc?.stop());

  it("within seconds of the sales, the document's sales and revenue equal the ledger exactly, per skill and in total", async () => {
    const doc = await eventually(
      async () => {
        const d = await analytics(seller);
        return d.totals.sales === 3 && d.totals.views >= 4 ? d : undefined;
      },
      30_000,
      200,
    );
    const { rows } = await sql<{ post_id: string; n: string; revenue: string }>`
      SELECT post_id, count(*)::text AS n, sum(amount_atomic)::text AS revenue FROM purchases
      WHERE seller_id = ${seller.id} GROUP BY post_id`.execute(svc.service.runtime.database.db);
    const ledger = Object.fromEntries(rows.map((r) => [r.post_id, r]));
    expect(Object.keys(ledger)).to.have.length(2);
    for (const f of doc.funnel) {
      expect(String(f.settled), f.postId).to.equal(ledger[f.postId]?.n);
      expect(f.revenueAtomic).to.equal(ledger[f.postId]?.revenue);
    }
    expect(doc.totals.revenueAtomic).to.equal(String(750_000 * 2 + 1_250_000));
    const today = doc.daily.at(-1)!;
    expect(today).to.deep.equal({ day: new Date().toISOString().slice(0, 10), sales: 3, revenueAtomic: '2750000' });
    expect(doc.buyers).to.deep.equal({ total: 2, new: 2, repeat: 0 });
  });

  it('a buyer who had bought from the seller before the window counts as a repeat buyer, and its old sale outside the window', async () => {
    const db = svc.service.runtime.database.db;
    const rolledBack = new Error('rolled back');
    let doc: Doc | undefined;
    await db
      .transaction()
      .execute(async (trx) => {
        // The rival's first purchase (Alpha) moved to before the 90 days; its Beta purchase stays in them.
        await sql`UPDATE purchases SET created_at = now() - interval '120 days'
                  WHERE seller_id = ${seller.id} AND post_id = ${skills.alpha} AND buyer_address = ${rival.address.toLowerCase()}`.execute(
          trx,
        );
        // History rewritten: the seller's sealed days (sums of days that could no longer change) are
        // forgotten, so the job sums its history again as it now reads.
        await sql`DELETE FROM seller_analytics_sealed WHERE seller_id = ${seller.id}`.execute(trx);
        doc = (await refreshAgentAnalytics(trx, seller.id)) as Doc | undefined;
        throw rolledBack;
      })
      .catch((e: unknown) => {
        if (e !== rolledBack) throw e;
      });
    expect(doc?.buyers).to.deep.equal({ total: 2, new: 1, repeat: 1 });
    expect(doc?.totals.sales).to.equal(2);
    expect(doc?.totals.revenueAtomic).to.equal(String(750_000 + 1_250_000));
  });

  it('views, 402 challenges, attempts and deliveries are counted per skill, with the search page as the referrer', async () => {
    const doc = await eventually(
      async () => {
        const d = await analytics(seller);
        return d.totals.delivered >= 3 && d.totals.challenges >= 3 ? d : undefined;
      },
      30_000,
      200,
    );
    const alpha = doc.funnel.find((f) => f.postId === skills.alpha)!;
    const beta = doc.funnel.find((f) => f.postId === skills.beta)!;
    expect(alpha).to.include({ views: 3, challenges: 2, attempts: 2, settled: 2, delivered: 2 });
    expect(beta).to.include({ views: 1, challenges: 1, attempts: 1, settled: 1, delivered: 1 });
    expect(doc.referrers.find((r) => r.source === 'search')).to.deep.equal({
      source: 'search',
      views: 3,
      challenges: 0,
    });
    expect(doc.referrers.find((r) => r.source === 'direct')?.challenges).to.equal(3);
  });

  it('the document is private: Cache-Control private, and 401 problem+json without a token', async () => {
    const res = await seller.api('/api/agents/me/analytics');
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.match(/^private/);
    const anonymous = await fetch(`${svc.url}/api/agents/me/analytics`);
    expect(anonymous.status).to.equal(401);
    expect(anonymous.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect((await anonymous.json()).code).to.equal('token_missing');
    const forged = await fetch(`${svc.url}/api/agents/me/analytics`, {
      headers: { authorization: 'Bearer not.a.jwt' },
    });
    expect(forged.status).to.equal(401);
  });

  it("another agent's token reads its own analytics, never the seller's: none of the seller's skills or sales", async () => {
    const doc = await analytics(rival);
    expect(doc.handle).to.equal('chart-rival');
    expect(doc.totals.sales).to.equal(0);
    expect(doc.funnel.map((f) => f.postId)).to.not.include(skills.alpha);
  });

  it("the dashboard renders for its owner with its charts; another agent's token gets 403, nobody 401 with the sign-in form", async () => {
    const path = `${svc.url}/agents/${seller.handle}/analytics`;
    const own = await fetch(path, { headers: { authorization: `Bearer ${seller.token}` } });
    expect(own.status).to.equal(200);
    expect(own.headers.get('cache-control')).to.match(/^private/);
    const html = await own.text();
    expect(html.match(/<svg class="chart/g)?.length).to.be.greaterThan(4);
    expect(html).to.contain('2.75').and.to.contain('Alpha');
    const browser = { accept: 'text/html,application/xhtml+xml' };
    const other = await fetch(path, { headers: { ...browser, authorization: `Bearer ${rival.token}` } });
    expect(other.status).to.equal(403);
    expect(await other.text()).to.not.contain('Alpha');
    const nobody = await fetch(path, { headers: browser });
    expect(nobody.status).to.equal(401);
    expect(await nobody.text()).to.contain(`action="/agents/${seller.handle}/analytics/sign-in"`);
    // A client that does not ask for a page gets problem+json, as on every page.
    const script = await fetch(path, { headers: { accept: 'application/json' } });
    expect(script.status).to.equal(401);
    expect(script.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect((await script.json()).code).to.equal('token_missing');
    const rivalScript = await fetch(path, { headers: { authorization: `Bearer ${rival.token}` } });
    expect(rivalScript.status).to.equal(403);
    expect((await rivalScript.json()).code).to.equal('not_your_analytics');
  });

  it('the dashboard tells its owner of a disabled webhook endpoint, and only while it is disabled', async () => {
    const path = `${svc.url}/agents/${seller.handle}/analytics`;
    const page = async () => (await fetch(path, { headers: { authorization: `Bearer ${seller.token}` } })).text();
    expect(await page()).to.not.contain('id="webhooks-disabled"');
    const created = await seller.api('/api/webhooks', {
      method: 'POST',
      json: { url: 'http://127.0.0.1:9/analytics-hook', eventTypes: ['sale.settled'] },
    });
    expect(created.status, await created.clone().text()).to.equal(201);
    const hook = (await created.json()) as { id: string };
    const patch = (enabled: boolean) => seller.api(`/api/webhooks/${hook.id}`, { method: 'PATCH', json: { enabled } });
    expect((await patch(false)).status).to.equal(200);
    const html = await page();
    expect(html).to.contain('id="webhooks-disabled"').and.to.contain('http://127.0.0.1:9/analytics-hook');
    // Another agent's dashboard read by its owner shows none of the seller's endpoints.
    const rivals = await fetch(`${svc.url}/agents/${rival.handle}/analytics`, {
      headers: { authorization: `Bearer ${rival.token}` },
    });
    expect(await rivals.text()).to.not.contain('analytics-hook');
    expect((await patch(true)).status).to.equal(200);
    expect(await page()).to.not.contain('id="webhooks-disabled"');
    await seller.api(`/api/webhooks/${hook.id}`, { method: 'DELETE' });
  });

  it("the sign-in form sets an HttpOnly, SameSite=Strict cookie for the dashboard's path; a cross-site post or another agent's token sets none", async () => {
    const signIn = (token: string, headers: Record<string, string> = {}) =>
      fetch(`${svc.url}/agents/${seller.handle}/analytics/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: svc.url, ...headers },
        body: new URLSearchParams({ token }).toString(),
      });
    const res = await signIn(seller.token);
    expect(res.status).to.equal(303);
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).to.match(new RegExp(`^${ANALYTICS_COOKIE}=`));
    expect(cookie).to.contain('HttpOnly').and.to.contain('SameSite=Strict');
    expect(cookie).to.contain(`Path=/agents/${seller.handle}/analytics`);
    const page = await fetch(`${svc.url}/agents/${seller.handle}/analytics`, {
      headers: { cookie: cookie.split(';')[0]! },
    });
    expect(page.status).to.equal(200);
    expect(await page.text()).to.contain(`action="/agents/${seller.handle}/analytics/sign-out"`);
    // The cookie holds a session for the dashboard only, never the agent token: the API refuses it.
    const session = decodeURIComponent(cookie.split(';')[0]!.slice(ANALYTICS_COOKIE.length + 1));
    expect(session).to.not.equal(seller.token);
    const asBearer = await fetch(`${svc.url}/api/agents/me/analytics`, {
      headers: { authorization: `Bearer ${session}` },
    });
    expect(asBearer.status).to.equal(401);
    expect((await asBearer.json()).code).to.equal('token_invalid');
    // Signing out removes the cookie and sends the browser back to the sign-in form.
    const signOut = (origin: string) =>
      fetch(`${svc.url}/agents/${seller.handle}/analytics/sign-out`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin },
      });
    expect((await signOut('https://evil.example')).status).to.equal(403);
    const out = await signOut(svc.url);
    expect(out.status).to.equal(303);
    expect(out.headers.get('location')).to.equal(`/agents/${seller.handle}/analytics`);
    expect(out.headers.get('set-cookie')).to.match(new RegExp(`^${ANALYTICS_COOKIE}=;.*Max-Age=0`));

    const crossSite = await signIn(seller.token, { origin: 'https://evil.example' });
    expect(crossSite.status).to.equal(403);
    expect(crossSite.headers.get('set-cookie')).to.equal(null);
    expect((await crossSite.json()).code).to.equal('cross_site_sign_in');
    const rivals = await signIn(rival.token);
    expect(rivals.status).to.equal(403);
    expect(rivals.headers.get('set-cookie')).to.equal(null);
    expect((await rivals.json()).code).to.equal('not_your_analytics');
    const wrong = await signIn('nonsense');
    expect(wrong.status).to.equal(401);
    expect(wrong.headers.get('set-cookie')).to.equal(null);
  });

  it('a skill previewed and bought over MCP counts its view, challenge and delivery with MCP as the referrer', async () => {
    const gamma = await publish('Gamma', '500000');
    const mcp = await connectMcp(svc.url);
    try {
      await mcp.callTool({ name: 'get_skill_preview', arguments: { postId: gamma } });
      const { result } = await buyOverMcp(mcp, x402Payer(svc.service.runtime.chain, walletBuyer.account), gamma);
      expect(result.isError, JSON.stringify(result.content)).to.not.equal(true);
    } finally {
      await mcp.close();
    }
    const doc = await eventually(
      async () => {
        const d = await analytics(seller);
        const f = d.funnel.find((x) => x.postId === gamma);
        return f && f.delivered === 1 && f.views === 1 ? d : undefined;
      },
      30_000,
      200,
    );
    expect(doc.funnel.find((x) => x.postId === gamma)).to.include({ views: 1, challenges: 1, attempts: 1, settled: 1 });
    expect(doc.referrers.find((r) => r.source === 'mcp')).to.deep.equal({ source: 'mcp', views: 1, challenges: 1 });
    expect(doc.buyers).to.deep.equal({ total: 2, new: 2, repeat: 0 });
  });

  it('a read answers the stored document while it is fresh, and computes it again once it is stale', async () => {
    const db = svc.service.runtime.database.db;
    // No refresh still queued from the tests before may overwrite what this test writes.
    await eventually(async () => {
      const c = await svc.service.runtime.queues.documents.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
      return (c.waiting ?? 0) + (c.delayed ?? 0) + (c.active ?? 0) === 0;
    }, 30_000);
    const tamper = (age: string) =>
      sql`UPDATE agent_analytics SET document = jsonb_set(document, '{totals,sales}', '99'),
            computed_at = now() - ${age}::interval WHERE agent_id = ${seller.id}`.execute(db);
    await tamper('1 second');
    expect((await analytics(seller)).totals.sales).to.equal(99);
    await tamper('1 hour');
    expect((await analytics(seller)).totals.sales).to.equal(4);
  });

  it('operators see how far behind the counters are in /metrics', async () => {
    const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.adminToken}` } });
    const text = await res.text();
    const lag = Number(/^analytics_counter_flush_lag_seconds (\S+)$/m.exec(text)?.[1]);
    expect(lag).to.be.within(0, 5);
    expect(text).to.match(/^analytics_counts_dropped 0$/m);
  });
});

describe("seller analytics of the demo population: every seller's document equals the ledger", function () {
  this.timeout(240_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService({ ANALYTICS_FLUSH_MS: '200' });
  });
  after(async () => svc?.stop());

  it("after the demo's purchases, reviews and refunds, each agent's sales, revenue and refunds are the ledger's, to the atomic unit", async () => {
    const demo = await runDemo({ baseUrl: svc.url, agents: 7, purchases: 14, tradingSeconds: 0 });
    expect(demo.purchases.filter((p) => p.paid).length).to.be.greaterThan(5);
    const db = svc.service.runtime.database.db;
    const ledger = async () => {
      const { rows } = await sql<{ handle: string; sales: string; revenue: string; refunded: string }>`
        SELECT a.handle,
               (SELECT count(*) FROM purchases u WHERE u.seller_id = a.id)::text AS sales,
               (SELECT coalesce(sum(amount_atomic), 0) FROM purchases u WHERE u.seller_id = a.id)::text AS revenue,
               (SELECT coalesce(sum(amount_atomic), 0) FROM refunds r WHERE r.seller_id = a.id AND r.status = 'settled')::text AS refunded
        FROM agents a`.execute(db);
      return new Map(rows.map((r) => [r.handle, r]));
    };
    await eventually(
      async () => {
        const expected = await ledger();
        for (const agent of demo.agents) {
          const doc = await (
            await fetch(`${svc.url}/api/agents/me/analytics`, { headers: { authorization: `Bearer ${agent.token}` } })
          ).json();
          const row = expected.get(agent.handle)!;
          if (
            String(doc.totals.sales) !== row.sales ||
            doc.totals.revenueAtomic !== row.revenue ||
            doc.totals.refundedAtomic !== row.refunded
          )
            throw new Error(
              `@${agent.handle}: ${JSON.stringify(doc.totals)} against the ledger's ${JSON.stringify(row)}`,
            );
        }
        return true;
      },
      60_000,
      500,
    );
    const sold = [...(await ledger()).values()].filter((r) => r.sales !== '0');
    expect(sold.length).to.be.greaterThan(1);
  });
});
