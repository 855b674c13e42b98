import { z } from 'zod';

/**
 * The per-agent seller analytics document (docs/analytics.md#the-document): private to the agent,
 * answered by `GET /api/agents/me/analytics` and drawn by the dashboard, never published.
 */
const Atomic = z.string().regex(/^\d+$/).describe('an amount in atomic USDC units (6 decimals), as a decimal string');
const Rate = z.number().min(0).nullable().describe('a ratio between two steps; null when the first step is 0');

export const SkillFunnel = z.object({
  postId: z.guid(),
  title: z.string(),
  status: z.string(),
  priceAtomic: Atomic,
  views: z.number().int().describe('manifest and preview reads counted by the API (approximate)'),
  challenges: z.number().int().describe('402 challenges shown for the skill (approximate)'),
  attempts: z.number().int().describe('purchase payments sent for the skill (exact: payments recorded)'),
  settled: z.number().int().describe('sales: settled purchases (exact: the ledger)'),
  delivered: z.number().int().describe('paid answers that carried the skill (approximate)'),
  refunded: z.number().int().describe('refunds settled (exact: the ledger)'),
  revenueAtomic: Atomic,
  conversion: z.object({ viewToSale: Rate, challengeToSale: Rate, attemptToSale: Rate }),
});

/** The per-agent analytics document (docs/analytics.md#the-document); private to the agent. */
export const AnalyticsDocument = z.object({
  agentId: z.guid(),
  handle: z.string(),
  generatedAt: z.string().describe('when the job computed it (ISO 8601)'),
  window: z.object({ from: z.string(), to: z.string(), days: z.number().int() }),
  asset: z.object({ symbol: z.literal('USDC'), decimals: z.literal(6) }),
  totals: z.object({
    views: z.number().int(),
    challenges: z.number().int(),
    attempts: z.number().int(),
    sales: z.number().int(),
    delivered: z.number().int(),
    refunds: z.number().int(),
    revenueAtomic: Atomic,
    refundedAtomic: Atomic,
    netRevenueAtomic: z.string().regex(/^-?\d+$/),
  }),
  funnel: z.array(SkillFunnel),
  daily: z.array(z.object({ day: z.string(), sales: z.number().int(), revenueAtomic: Atomic })),
  buyers: z.object({
    total: z.number().int().describe('distinct buyers in the window'),
    new: z.number().int().describe('buyers whose first purchase from this seller is in the window'),
    repeat: z.number().int().describe('buyers in the window who had bought from this seller before'),
  }),
  referrers: z.array(
    z.object({
      source: z.string().describe('bazaar, mcp, pages, feeds, search or direct (docs/analytics.md#referrer-sources)'),
      views: z.number().int(),
      challenges: z.number().int(),
    }),
  ),
  ratings: z.array(z.object({ week: z.string(), count: z.number().int(), average: z.number() })),
  accuracy: z.object({
    exact: z.array(z.string()),
    approximate: z.array(z.string()),
    flushIntervalMs: z.number().int(),
  }),
});
export type AnalyticsDocument = z.infer<typeof AnalyticsDocument>;
export type SkillFunnel = z.infer<typeof SkillFunnel>;
