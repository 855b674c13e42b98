import { z } from 'zod';
import { defineJob } from './job.js';
import { queueStuckSettlements } from '../src/domain/payments/reconcile-payments.use-case.js';

/**
 * Finds payments stuck in flight (older than PAYMENTS_STUCK_AFTER_MS: no longer a request in
 * progress) and hands each to `settle-payment` (one job per payment at a time).
 */
export const reconcilePaymentsJob = defineJob({
  name: 'reconcile-payments',
  queue: 'payments',
  payload: z.object({ olderThanMs: z.number().int().min(0).optional() }).strict(),
  async run(ctx, { olderThanMs }) {
    const enqueued = await queueStuckSettlements(ctx, olderThanMs ?? ctx.paymentsStuckAfterMs);
    return { enqueued };
  },
});
