import type { Db } from '../../../data/db.js';
import { findStuck } from '../../../data/payments.repository.js';
import { purgeUsedSiwxNonces } from '../paywall/sign-in-with-x.js';

export interface ReconcileDeps {
  db: Db;
  /** Queues the settle-payment job of one payment (deduplicated per payment). */
  enqueueSettlement(paymentId: string): Promise<void>;
}

/**
 * Finds payments in flight for longer than `olderThanMs` (no longer a request in progress) and
 * queues the settle-payment job of each, which resolves it from the chain. Returns how many it
 * queued. Queuing twice is harmless: one job per payment runs at a time.
 */
export async function queueStuckSettlements(deps: ReconcileDeps, olderThanMs: number): Promise<number> {
  const stuck = await findStuck(deps.db, olderThanMs);
  for (const p of stuck) await deps.enqueueSettlement(p.id);
  return stuck.length;
}

/**
 * The reconciler's pass: queues a retry for each stuck payment, and forgets Sign-In-With-X nonces
 * too old to matter (their messages are refused by age, so a replay of one is refused anyway).
 */
export async function reconcilePayments(
  deps: ReconcileDeps,
  olderThanMs: number,
): Promise<{ enqueued: number; purgedSiwxNonces: number }> {
  const enqueued = await queueStuckSettlements(deps, olderThanMs);
  return { enqueued, purgedSiwxNonces: await purgeUsedSiwxNonces(deps.db) };
}
