import { isAddressEqual, type Address } from 'viem';
import { findBadgeFigures } from '../../data/scoring.repository.js';
import { readSellerRatingTotals } from '../../data/reviews.repository.js';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import { renderBadge, type BadgeKind, type BadgeStyle } from '../../documents/agent/badge.renderer.js';
import { AppError } from '../../platform/errors.js';

/** A seller's rating as its badge shows it: the count and the mean stars. */
const ratingOf = (r: { count: number; total: number }) => ({
  count: r.count,
  mean: r.count ? r.total / r.count : null,
});

/**
 * A badge of any kind and style from what the last recompute stored: the figures of its metrics
 * row (written with the published badge, from the same facts) and its cached identity. A pure
 * read, for the API: rendering from the facts would refresh the identity from the chain and write
 * its cache. Null when the agent has not been recomputed yet.
 */
export async function readBadge(db: Db, agent: Agent, kind: BadgeKind, style: BadgeStyle): Promise<string | null> {
  const row = await findBadgeFigures(db, agent.id);
  if (!row) return null;
  // As the recompute decides it: the cached resolution counts only for the token the agent links now.
  const verified = Boolean(
    agent.token_id &&
      row.token_id === agent.token_id &&
      row.owner &&
      isAddressEqual(row.owner as Address, agent.wallet_address as Address),
  );
  return renderBadge(
    {
      revenueAtomic90d: BigInt(row.revenue_atomic_90d),
      uniqueBuyers90d: row.unique_buyers_90d,
      publishedSkillCount: row.published_skills,
      verified,
      ...(kind === 'rating' ? { rating: ratingOf(await readSellerRatingTotals(db, agent.id)) } : {}),
    },
    kind,
    style,
  );
}

/**
 * A per-agent document asked for before the agent's first recompute published it. Answered 404
 * (there is nothing to show yet) with its own code, so clients can tell it from an unknown agent
 * and ask again shortly; the request has queued the recompute.
 */
export class DocumentNotReadyError extends AppError {
  constructor(
    handle: string,
    name: string,
    readonly retryAfterSeconds: number,
  ) {
    super(
      404,
      'document_not_ready',
      `The ${name} document of @${handle} is not published yet; it is being computed, ask again in a few seconds`,
      { retryAfterSeconds },
    );
  }
}
