import { z } from 'zod';
import { defineJob } from './job.js';
import { FANOUT_JOB, fanOutEvent } from '../src/domain/webhooks/deliveries.use-cases.js';

/**
 * Turns one domain event into webhook deliveries, one per subscribed endpoint of the agent it
 * concerns, and queues them. Queued by the outbox dispatcher; idempotent (a delivery per endpoint
 * and message), so running it twice sends nothing twice.
 */
export const webhookFanoutJob = defineJob({
  name: FANOUT_JOB,
  queue: 'webhooks',
  payload: z.object({ eventId: z.string().regex(/^\d+$/) }).strict(),
  run: (ctx, { eventId }) =>
    fanOutEvent({ db: ctx.db, schedule: ctx.webhooks.schedule, enqueue: ctx.webhooks.enqueue }, eventId),
});
