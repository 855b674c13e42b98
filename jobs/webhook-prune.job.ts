import { z } from 'zod';
import { defineJob } from './job.js';
import { PRUNE_JOB, pruneDeliveryLog } from '../src/domain/webhooks/deliveries.use-cases.js';

/** Daily: the webhook delivery log keeps finished deliveries for DELIVERY_LOG_DAYS (docs/webhooks.md). */
export const webhookPruneJob = defineJob({
  name: PRUNE_JOB,
  queue: 'webhooks',
  payload: z.object({}).strict(),
  run: (ctx) => pruneDeliveryLog(ctx.db),
});
