import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';

/** The queues of the service. Each has its own worker pool; see docs/pipeline.md. */
export const QUEUE_NAMES = ['documents', 'payments'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/**
 * Every job is idempotent, so retrying is always safe: transient failures retry with exponential
 * backoff; completed jobs are kept for an hour so a deterministic job id enqueued again by a
 * second scheduler replica within that hour is recognised and dropped.
 */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: { age: 3600, count: 5000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

export type Queues = Record<QueueName, Queue>;

export function createQueues(connection: Redis, prefix: string): Queues {
  return Object.fromEntries(
    QUEUE_NAMES.map((name) => [name, new Queue(name, { connection, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS })]),
  ) as Queues;
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map((q) => q.close()));
}

/**
 * Queues a settlement check for one payment. The job id is the payment's, so a payment has at
 * most one such job at a time; it is removed on completion so a later check can be queued again.
 */
export async function enqueueSettlement(queues: Queues, paymentId: string, delayMs = 1000): Promise<void> {
  await queues.payments.add('settle-payment', { paymentId }, {
    jobId: `settle-${paymentId}`,
    delay: delayMs,
    attempts: 8,
    backoff: { type: 'exponential', delay: 2000 },
    // Removed when done either way: a later reconciler pass must be able to queue the payment again.
    removeOnComplete: true,
    removeOnFail: true,
  });
}

/** BullMQ job ids may not contain ':'; slot ids are compact UTC minutes (202611210535). */
export function slotId(name: string, at: Date): string {
  const slot = at.toISOString().slice(0, 16).replace(/[-:T]/g, '');
  return `${name}-${slot}`;
}
