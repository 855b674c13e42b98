import {
  SOURCES,
  type FunnelKind,
  type DailySales,
  type SellerSkill,
  type Source,
} from '../../data/analytics.repository.js';
import type { AnalyticsDocument, SkillFunnel } from '../../documents/analytics.schema.js';
import { utcDay } from './funnel-counters.js';

export { AnalyticsDocument } from '../../documents/analytics.schema.js';

/** The days an analytics document covers, today included. */
export const ANALYTICS_DAYS = 90;
/** The most skills a document lists (the seller's newest). */
export const ANALYTICS_MAX_SKILLS = 200;

/** What the job read for one agent, as the repository returns it. */
export interface AnalyticsInput {
  agent: { id: string; handle: string };
  skills: SellerSkill[];
  counts: Array<{ post_id: string; kind: FunnelKind; source: Source; count: string }>;
  attempts: Array<{ post_id: string; attempts: string }>;
  sales: DailySales[];
  buyers: { total: number; new: number };
  refunds: Array<{ post_id: string; day: string; amount_atomic: string }>;
  ratings: Array<{ week: string; count: string; average: number }>;
  flushIntervalMs: number;
}

/** The first day a document starting `now` covers (UTC, YYYY-MM-DD). */
export function windowStart(now: Date, days = ANALYTICS_DAYS): string {
  return utcDay(new Date(now.getTime() - (days - 1) * 86_400_000));
}

const rate = (num: number, den: number) => (den > 0 ? Math.round((num / den) * 10_000) / 10_000 : null);

/**
 * Builds the document from what was read: pure, so the same rows always give the same document.
 * Sales, revenue and refunds come only from the ledger (its recent days, and the sealed sums of
 * the older ones), so they equal the ledger exactly.
 */
export function buildAnalyticsDocument(input: AnalyticsInput, now: Date): AnalyticsDocument {
  const from = windowStart(now);
  const per = new Map<string, { views: number; challenges: number; delivered: number }>();
  const bySource = new Map<Source, { views: number; challenges: number }>();
  for (const c of input.counts) {
    const n = Number(c.count);
    const p = per.get(c.post_id) ?? { views: 0, challenges: 0, delivered: 0 };
    if (c.kind === 'view') p.views += n;
    else if (c.kind === 'challenge') p.challenges += n;
    else p.delivered += n;
    per.set(c.post_id, p);
    if (c.kind !== 'delivered') {
      const s = bySource.get(c.source) ?? { views: 0, challenges: 0 };
      if (c.kind === 'view') s.views += n;
      else s.challenges += n;
      bySource.set(c.source, s);
    }
  }
  const attempts = new Map(input.attempts.map((a) => [a.post_id, Number(a.attempts)]));
  const salesOf = new Map<string, { n: number; revenue: bigint }>();
  const daily = new Map<string, { sales: number; revenue: bigint }>();
  let sales = 0;
  let revenue = 0n;
  for (const s of input.sales) {
    const n = Number(s.sales);
    const amount = BigInt(s.amount_atomic);
    sales += n;
    revenue += amount;
    const p = salesOf.get(s.post_id) ?? { n: 0, revenue: 0n };
    p.n += n;
    p.revenue += amount;
    salesOf.set(s.post_id, p);
    const d = daily.get(s.day) ?? { sales: 0, revenue: 0n };
    d.sales += n;
    d.revenue += amount;
    daily.set(s.day, d);
  }
  const refundsOf = new Map<string, number>();
  let refundedAtomic = 0n;
  for (const r of input.refunds) {
    refundsOf.set(r.post_id, (refundsOf.get(r.post_id) ?? 0) + 1);
    refundedAtomic += BigInt(r.amount_atomic);
  }

  const funnel: SkillFunnel[] = input.skills.map((skill) => {
    const counted = per.get(skill.id) ?? { views: 0, challenges: 0, delivered: 0 };
    const sold = salesOf.get(skill.id) ?? { n: 0, revenue: 0n };
    const tried = attempts.get(skill.id) ?? 0;
    return {
      postId: skill.id,
      title: skill.title,
      status: skill.status,
      priceAtomic: skill.price_atomic,
      views: counted.views,
      challenges: counted.challenges,
      attempts: tried,
      settled: sold.n,
      delivered: counted.delivered,
      refunded: refundsOf.get(skill.id) ?? 0,
      revenueAtomic: sold.revenue.toString(),
      conversion: {
        viewToSale: rate(sold.n, counted.views),
        challengeToSale: rate(sold.n, counted.challenges),
        attemptToSale: rate(sold.n, tried),
      },
    };
  });

  const days: AnalyticsDocument['daily'] = [];
  for (let i = ANALYTICS_DAYS - 1; i >= 0; i--) {
    const day = utcDay(new Date(now.getTime() - i * 86_400_000));
    const d = daily.get(day);
    days.push({ day, sales: d?.sales ?? 0, revenueAtomic: (d?.revenue ?? 0n).toString() });
  }

  const sum = (f: (x: SkillFunnel) => number) => funnel.reduce((t, x) => t + f(x), 0);
  return {
    agentId: input.agent.id,
    handle: input.agent.handle,
    generatedAt: now.toISOString(),
    window: { from, to: utcDay(now), days: ANALYTICS_DAYS },
    asset: { symbol: 'USDC', decimals: 6 },
    totals: {
      views: sum((x) => x.views),
      challenges: sum((x) => x.challenges),
      attempts: sum((x) => x.attempts),
      sales,
      delivered: sum((x) => x.delivered),
      refunds: input.refunds.length,
      revenueAtomic: revenue.toString(),
      refundedAtomic: refundedAtomic.toString(),
      netRevenueAtomic: (revenue - refundedAtomic).toString(),
    },
    funnel,
    daily: days,
    // New: first bought from this seller inside the window; repeat: bought from it before too.
    buyers: { total: input.buyers.total, new: input.buyers.new, repeat: input.buyers.total - input.buyers.new },
    referrers: SOURCES.map((source) => ({ source, ...(bySource.get(source) ?? { views: 0, challenges: 0 }) }))
      .filter((r) => r.views + r.challenges > 0)
      .sort((a, b) => b.views + b.challenges - (a.views + a.challenges)),
    ratings: input.ratings.map((r) => ({
      week: r.week,
      count: Number(r.count),
      average: Math.round(r.average * 100) / 100,
    })),
    accuracy: {
      exact: ['attempts', 'settled', 'sales', 'revenueAtomic', 'refunds', 'refundedAtomic', 'buyers', 'ratings'],
      approximate: ['views', 'challenges', 'delivered', 'referrers'],
      flushIntervalMs: input.flushIntervalMs,
    },
  };
}
