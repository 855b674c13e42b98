import { z } from 'zod';
import { defineJob } from './job.js';
import { resolvePayment } from '../src/domain/payments/ledger/resolve-payment.js';

/** Resolves one in-flight payment from the chain, retrying settlement when its outcome is unknown. */
export const settlePaymentJob = defineJob({
  name: 'settle-payment',
  queue: 'payments',
  payload: z.object({ paymentId: z.guid() }).strict(),
  async run(ctx, { paymentId }) {
    const resolution = await resolvePayment(
      {
        db: ctx.db,
        facilitators: ctx.facilitators,
        settlementEffects: ctx.settlementEffects,
        publicClient: ctx.chain.publicClient,
        log: ctx.log,
      },
      paymentId,
    );
    return { paymentId, resolution };
  },
});
