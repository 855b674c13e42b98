import { z } from 'zod';
import { defineJob } from './job.js';
import { findStuck } from '../src/domain/payments/payments.repository.js';

/** Older than this, an in-flight payment is no longer a request in progress but a stuck one. */
export const STUCK_AFTER_MS = 60_000;

/** Finds payments stuck in flight and hands each to `settle-payment` (one job per payment at a time). */
export const reconcilePaymentsJob = defineJob({
  name: 'reconcile-payments',
  queue: 'payments',
  payload: z.object({ olderThanMs: z.number().int().min(0).optional() }).strict(),
  async run(ctx, { olderThanMs }) {
    const stuck = await findStuck(ctx.db, olderThanMs ?? STUCK_AFTER_MS);
    for (const p of stuck) await ctx.enqueueSettlement(p.id);
    return { enqueued: stuck.length };
  },
});
