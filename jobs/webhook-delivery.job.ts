import { z } from 'zod';
import { defineJob } from './job.js';
import { attemptDelivery, DELIVERY_JOB, webhookBackoff } from '../src/domain/webhooks/deliveries.use-cases.js';

export { webhookBackoff };

/**
 * One attempt of one webhook delivery (docs/webhooks.md). A failed attempt with attempts left
 * throws, and the queue waits the delay the retry schedule drew for it (webhookBackoff); the job
 * id is the delivery's, so each delivery is queued once.
 */
export const webhookDeliveryJob = defineJob({
  name: DELIVERY_JOB,
  queue: 'webhooks',
  payload: z.object({ deliveryId: z.guid() }).strict(),
  run: (ctx, { deliveryId }) =>
    attemptDelivery(
      { db: ctx.db, log: ctx.log, policy: ctx.webhooks.policy, schedule: ctx.webhooks.schedule },
      deliveryId,
    ),
});
