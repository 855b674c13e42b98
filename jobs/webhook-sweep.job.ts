import { z } from 'zod';
import { defineJob } from './job.js';
import { SWEEP_JOB, sweepStrandedDeliveries } from '../src/domain/webhooks/deliveries.use-cases.js';

/**
 * Every few minutes and at start: pending webhook deliveries long past their due time, whose job
 * gave up or was lost, are queued again (docs/webhooks.md#when-a-job-is-lost).
 */
export const webhookSweepJob = defineJob({
  name: SWEEP_JOB,
  queue: 'webhooks',
  payload: z.object({}).strict(),
  run: (ctx) => sweepStrandedDeliveries({ db: ctx.db, requeue: ctx.webhooks.requeue }),
});
