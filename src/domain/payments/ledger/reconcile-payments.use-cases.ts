import type { Db } from '../../../data/db.js';
import { findStuck } from '../../../data/payments.repository.js';

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
