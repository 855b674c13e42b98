import { createHash } from 'node:crypto';
import type { Agent } from '../../data/schema.js';
import { REPUTATION_LIMIT } from '../../documents/agent/reputation.document.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { stableHash } from '../publishing/content-hash.js';
import type { AgentFacts } from '../scoring/facts.js';
import type { ScoreDocument } from '../scoring/score.js';

/**
 * A score document whose only change is time passing is republished once its copy is this old:
 * under a day, so the daily recompute always refreshes it whatever the page order of the run.
 */
export const SCORE_REFRESH_MS = 20 * 3600_000;

const roundTo = (decimals: number) => {
  const f = 10 ** decimals;
  const round = (v: unknown): unknown =>
    typeof v === 'number'
      ? Math.round(v * f) / f
      : Array.isArray(v)
        ? v.map(round)
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, round(x)]))
          : v;
  return round;
};
const tenths = roundTo(1);
const hundredths = roundTo(2);

/**
 * What makes a score document different from the last one published, leaving out the passage of
 * time: the days since the last sale and publish, and the small moves of the components that decay
 * with them. Points (the score, the raw score and the contributions, 0..100) count to 0.1, the 0..1
 * figures (components, dimensions) to 0.01, every other member exactly. Without this, every active
 * agent's score document (and its metrics row, and its feed entry) changed on every recompute
 * though nothing had happened; counted to 0.01 point, half of them still did ten minutes apart.
 */
export function scoreContentHash(doc: ScoreDocument): string {
  const { inputs, score, ...rest } = doc;
  const { daysSinceLastSettle: _s, daysSinceLastPublish: _p, ...counts } = inputs;
  const { score: points, rawScore, contributions, ...figures } = score;
  return stableHash({
    ...rest,
    inputs: counts,
    score: { ...(hundredths(figures) as object), points: tenths({ score: points, rawScore, contributions }) },
  });
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
