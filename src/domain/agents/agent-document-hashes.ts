import { createHash } from 'node:crypto';
import type { Agent } from '../../data/schema.js';
import { REPUTATION_LIMIT } from '../../documents/agent/reputation.document.js';
import type { SiteInfo } from '../../documents/site-info.js';
import type { AgentFacts } from '../scoring/facts.js';
import type { ScoreDocument } from '../scoring/score.js';
import { METHODOLOGY_FINGERPRINT } from '../scoring/methodology.js';

/**
 * A score document whose only change is time passing is republished once its copy is this old:
 * under a day, so the daily recompute always refreshes it whatever the page order of the run.
 * Meanwhile the published score lags the freshness components' decay by at most their fall in
 * that time: under 0.05 each (half-life 14 days), under 0.5 of the score's 100 points. The other
 * components count to 0.01 (below), so they can add a few tenths of a point more.
 */
export const SCORE_REFRESH_MS = 20 * 3600_000;

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

const hundredths = (v: unknown): unknown =>
  typeof v === 'number'
    ? Math.round(v * 100) / 100
    : v && typeof v === 'object'
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, hundredths(x)]))
      : v;

/** The hour of an event `days` before `computedAt`, or null: what `daysSince…` says, without time passing. */
const hourOf = (computedAt: string, days: number | null) =>
  days === null ? null : Math.round((Date.parse(computedAt) - days * DAY_MS) / HOUR_MS);

/**
 * What makes a score document different from the last one published, leaving out the passage of
 * time. Time moves the days since the last sale and publish, the two freshness components that
 * decay with them, and every figure computed from the components (dimensions, contributions, raw
 * score, score); those are left out, and the document follows its decay through its daily refresh
 * (`SCORE_REFRESH_MS`). Kept: every count exactly, the hour of the last sale and publish (a move
 * the counts might not show), the other components to 0.01 (a percentile moves when the population
 * does), health, the checklist and the methodology (its URL and `METHODOLOGY_FINGERPRINT`). Rounding the
 * decaying figures instead (to 0.01) still changed a document whenever its decay crossed a
 * rounding step: by time alone, 4% of score documents 3 minutes apart and 47% 50 minutes apart
 * on a generated marketplace (bench/score-drift.ts).
 */
export function scoreContentHash(doc: ScoreDocument): string {
  // The time stamps (top-level and the score's `computedAt`) left out by hand rather than by
  // `stableHash`'s replacer, which slows JSON.stringify by half: the same JSON, so the same hash.
  const { inputs, score, computedAt: _at, ...rest } = doc;
  const { daysSinceLastSettle, daysSinceLastPublish, ...counts } = inputs;
  const {
    score: _points,
    rawScore: _raw,
    contributions: _c,
    dimensions: _d,
    components,
    computedAt: _scoreAt,
    ...figures
  } = score;
  const { settleFreshness: _s, publishFreshness: _p, ...reliability } = components.reliability;
  const content = {
    ...rest,
    methodology: [rest.methodology, METHODOLOGY_FINGERPRINT],
    inputs: {
      ...counts,
      lastSettleHour: hourOf(doc.computedAt, daysSinceLastSettle),
      lastPublishHour: hourOf(doc.computedAt, daysSinceLastPublish),
    },
    score: { ...figures, components: hundredths({ ...components, reliability }) },
  };
  return createHash('sha256').update(JSON.stringify(content)).digest('hex');
}

/**
 * What a reputation mirror is made of, short of reading it: purchases are never updated or
 * deleted, and each new one is the latest, so the agent's count of sales and its latest sale fix
 * which 100 are mirrored; the token id, the site and the receipt key fill in the rest. Stored as the document's
 * content hash, it lets a recompute skip reading and rendering the mirrors that cannot have changed
 * (100 purchases an agent: most of what a full recompute would otherwise read).
 */
export function reputationFingerprint(
  agent: Agent,
  facts: AgentFacts,
  site: SiteInfo,
  receiptSigner = '',
  trustMark = '',
): string {
  const parts = [
    // v2: each event carries its proof of payment with the signed receipt; v3: trust events beside the sales.
    'reputation-v3',
    trustMark,
    receiptSigner,
    REPUTATION_LIMIT,
    facts.settlementCountAll,
    facts.lastSettleAt?.toISOString() ?? '',
    agent.token_id ?? '',
    site.baseUrl,
    site.usdcAddress,
    site.network,
  ];
  return createHash('sha256').update(parts.join('|')).digest('hex');
}
