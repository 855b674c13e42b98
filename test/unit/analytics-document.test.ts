import { expect } from 'chai';
import { buildAnalyticsDocument, type AnalyticsInput } from '../../src/domain/analytics/analytics-document.js';
import { countOutcome, FunnelCounters } from '../../src/domain/analytics/funnel-counters.js';
import { sourceOf } from '../../src/domain/analytics/sources.js';
import { analyticsJobsFor } from '../../src/domain/analytics/analytics.use-cases.js';
import type { PaywallOutcome } from '../../src/domain/payments/paywall/paywall.js';

const A = '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6';
const B = '0b7e3c1d-9a8f-4e6d-b5c4-a3b2c1d0e9f8';
const NOW = new Date('2026-11-28T12:00:00Z');

const input = (over: Partial<AnalyticsInput> = {}): AnalyticsInput => ({
  agent: { id: A, handle: 'seller' },
  skills: [
    { id: A, title: 'Alpha', status: 'published', price_atomic: '1000000' },
    { id: B, title: 'Beta', status: 'published', price_atomic: '2500000' },
  ],
  counts: [],
  attempts: [],
  sales: [],
  buyers: { total: 0, new: 0 },
  refunds: [],
  ratings: [],
  flushIntervalMs: 5000,
  ...over,
});

describe('the analytics document is built from the counters and the ledger', () => {
  it('sales and revenue are the ledger rows, summed exactly (no float rounding), per skill and per day', () => {
    const doc = buildAnalyticsDocument(
      input({
        sales: [
          { post_id: A, day: '2026-11-27', sales: '1', amount_atomic: '1000001' },
          { post_id: A, day: '2026-11-28', sales: '1', amount_atomic: '1000001' },
          { post_id: B, day: '2026-11-28', sales: '2', amount_atomic: '9007199254740993' },
        ],
      }),
      NOW,
    );
    expect(doc.totals.sales).to.equal(4);
    expect(doc.totals.revenueAtomic).to.equal('9007199256740995');
    expect(doc.funnel.find((f) => f.postId === A)?.revenueAtomic).to.equal('2000002');
    expect(doc.daily).to.have.length(90);
    expect(doc.funnel.find((f) => f.postId === B)?.settled).to.equal(2);
    expect(doc.daily.at(-1)).to.deep.equal({ day: '2026-11-28', sales: 3, revenueAtomic: '9007199255740994' });
    expect(doc.daily[0]?.day).to.equal('2026-08-31');
    expect(doc.window).to.deep.equal({ from: '2026-08-31', to: '2026-11-28', days: 90 });
  });

  it('repeat buyers are the window’s buyers who are not new (the ledger counts both)', () => {
    const doc = buildAnalyticsDocument(input({ buyers: { total: 5, new: 3 } }), NOW);
    expect(doc.buyers).to.deep.equal({ total: 5, new: 3, repeat: 2 });
  });

  it('conversion divides by the step before, and is null (not Infinity) when nobody reached it', () => {
    const doc = buildAnalyticsDocument(
      input({
        counts: [
          { post_id: A, kind: 'view', source: 'pages', count: '8' },
          { post_id: A, kind: 'view', source: 'mcp', count: '2' },
          { post_id: A, kind: 'challenge', source: 'mcp', count: '4' },
        ],
        attempts: [{ post_id: A, attempts: '2' }],
        sales: [{ post_id: A, day: '2026-11-28', sales: '1', amount_atomic: '1' }],
      }),
      NOW,
    );
    const alpha = doc.funnel.find((f) => f.postId === A);
    expect(alpha?.conversion).to.deep.equal({ viewToSale: 0.1, challengeToSale: 0.25, attemptToSale: 0.5 });
    expect(doc.funnel.find((f) => f.postId === B)?.conversion.viewToSale).to.equal(null);
    expect(doc.referrers).to.deep.equal([
      { source: 'pages', views: 8, challenges: 0 },
      { source: 'mcp', views: 2, challenges: 4 },
    ]);
  });

  it('refunds are subtracted from the net revenue', () => {
    const doc = buildAnalyticsDocument(
      input({
        sales: [{ post_id: A, day: '2026-11-28', sales: '1', amount_atomic: '1000000' }],
        refunds: [{ post_id: A, day: '2026-11-28', amount_atomic: '1000000' }],
      }),
      NOW,
    );
    expect(doc.totals).to.include({ refunds: 1, refundedAtomic: '1000000', netRevenueAtomic: '0' });
    expect(doc.funnel[0]?.refunded).to.equal(1);
  });
});

describe('counting on the paid path: in memory, bounded, by source', () => {
  it('counts of one skill, day, kind and source add up in one counter until drained', () => {
    const c = new FunnelCounters(() => NOW);
    for (let i = 0; i < 1000; i++) c.count(A, 'view', 'pages');
    c.count(A, 'view', 'mcp');
    expect(c.size).to.equal(2);
    expect(c.drain()).to.deep.include({ postId: A, day: '2026-11-28', kind: 'view', source: 'pages', count: 1000 });
    expect(c.size).to.equal(0);
  });

  it('past its bound a process drops new counters and says how many, instead of growing', () => {
    const c = new FunnelCounters(() => NOW, 2);
    c.count(A, 'view', 'pages');
    c.count(B, 'view', 'pages');
    c.count(A, 'challenge', 'pages');
    c.count(A, 'view', 'pages');
    expect(c.size).to.equal(2);
    expect(c.dropped).to.equal(1);
  });

  it('a 402 asking for payment counts a challenge, a first delivery counts one, a replay or a refusal nothing', () => {
    const c = new FunnelCounters(() => NOW);
    const challenge = { kind: 'challenge', reason: 'payment_required' } as PaywallOutcome;
    const refused = { kind: 'challenge', reason: 'invalid_payment' } as PaywallOutcome;
    const paid = { kind: 'paid', replay: false } as PaywallOutcome;
    const replay = { kind: 'paid', replay: true } as PaywallOutcome;
    for (const o of [challenge, refused, paid, replay]) countOutcome(c, A, o, 'direct');
    expect(c.drain().map((x) => [x.kind, x.count])).to.deep.equal([
      ['challenge', 1],
      ['delivered', 1],
    ]);
  });

  it('the source comes from the request context only: MCP, or the path of our own page in the Referer', () => {
    const site = ['market.example'];
    const http = (referer?: string) => sourceOf({ transport: 'http', referer, siteHosts: site });
    expect(sourceOf({ transport: 'mcp', referer: 'https://market.example/search', siteHosts: site })).to.equal('mcp');
    expect(http()).to.equal('direct');
    expect(http('https://evil.example/search?q=x')).to.equal('direct');
    expect(http('not a url')).to.equal('direct');
    expect(http('https://market.example/search?q=pdf')).to.equal('search');
    expect(http('https://market.example/api/discovery/posts.json')).to.equal('feeds');
    expect(http('https://market.example/discovery/resources')).to.equal('bazaar');
    expect(http('https://market.example/agents/alice')).to.equal('pages');
  });

  it("a sale, a refund or a review refreshes its seller's analytics, coalesced per seller and window", () => {
    const sale = analyticsJobsFor({ type: 'purchase.settled', agent_id: A }, 1_000_000);
    expect(sale).to.have.length(1);
    expect(sale[0]?.jobId).to.equal(analyticsJobsFor({ type: 'review.posted', agent_id: A }, 1_004_000)[0]?.jobId);
    expect(analyticsJobsFor({ type: 'agent.profile_updated', agent_id: A })).to.deep.equal([]);
  });
});
