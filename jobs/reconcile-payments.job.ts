import { z } from 'zod';
import { defineJob } from './job.js';
import { queueStuckSettlements } from '../src/domain/payments/ledger/reconcile-payments.use-cases.js';
import { purgeUsedSiwxNonces } from '../src/domain/payments/paywall/sign-in-with-x.js';
import { reconcileRefunds } from '../src/domain/refunds/reconcile-refunds.use-cases.js';

/**
 * Finds payments stuck in flight (older than PAYMENTS_STUCK_AFTER_MS: no longer a request in
 * progress) and hands each to `settle-payment` (one job per payment at a time); resolves refunds
 * left relaying as long from the chain; forgets Sign-In-With-X nonces too old to matter.
 */
export const reconcilePaymentsJob = defineJob({
  name: 'reconcile-payments',
  queue: 'payments',
  payload: z.object({ olderThanMs: z.number().int().min(0).optional() }).strict(),
  async run(ctx, { olderThanMs }) {
    const stuckAfterMs = olderThanMs ?? ctx.paymentsStuckAfterMs;
    const enqueued = await queueStuckSettlements(ctx, stuckAfterMs);
    const refunds = await reconcileRefunds({
      db: ctx.db,
      publicClient: ctx.chain.publicClient,
      receipts: ctx.receipts,
      log: ctx.log,
      olderThanMs: stuckAfterMs,
    });
    return { enqueued, refunds, purgedSiwxNonces: await purgeUsedSiwxNonces(ctx.db) };
  },
});
