import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { DependencyUnavailableError } from './errors.js';
import type { Logger } from './logger.js';
import { TimeoutError, withTimeout } from './timeout.js';

/** The queues of the service. Each has its own worker pool; see docs/pipeline.md (webhooks: docs/webhooks.md). */
export const QUEUE_NAMES = ['documents', 'payments', 'webhooks'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/**
 * Every job is idempotent, so retrying is always safe: transient failures retry with exponential
 * backoff; completed jobs are kept for an hour so a deterministic job id enqueued again by a
 * second scheduler replica within that hour is recognised and dropped. Ten attempts from 500 ms
 * doubling span about four minutes, so a publish outlives a bucket or database outage that long.
 */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: { age: 3600, count: 5000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

export type Queues = Record<QueueName, Queue>;

/** The longest a request waits for Redis to take a job before it answers without it. */
export const ENQUEUE_TIMEOUT_MS = 1_000;
/** What a client refused for want of Redis is told to wait: a few of ioredis' reconnect attempts (at most 2 s apart). */
export const QUEUE_RETRY_AFTER_SECONDS = 5;
const QUEUE_DEPENDENCY = 'job queue (Redis)';

const producerConnections = new WeakMap<Queue, Redis>();

/**
 * `connection` should be a producer connection (RedisHandle.producer): commands are refused while
 * Redis is down instead of queued, so callers can bound their waits. Connection errors are logged
 * by that connection, once per outage; the queues' own copies of them are dropped here.
 */
export function createQueues(connection: Redis, prefix: string, log?: Logger): Queues {
  return Object.fromEntries(
    QUEUE_NAMES.map((name) => {
      const queue = new Queue(name, { connection, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
      // Without a listener BullMQ prints every reconnect failure to stderr.
      queue.on('error', (err) => log?.debug({ err, queue: name }, 'queue error'));
      producerConnections.set(queue, connection);
      return [name, queue];
    }),
  ) as Queues;
}

/** Whether Redis takes this queue's commands now: false while it is down, reconnecting or not yet connected. */
export function queueReady(queue: Queue): boolean {
  return producerConnections.get(queue)?.status === 'ready';
}

/**
 * Whether Redis answers a PING on the queues' connection within `timeoutMs`. Catches what the
 * connection status cannot: a Redis that stopped answering while its connection stays open (a
 * partition, a stopped process) still reads as ready.
 */
export async function queuesAnswer(queues: Queue[], timeoutMs: number): Promise<boolean> {
  // One PING per connection (the service's queues share one).
  const byConnection = new Map<Redis, Queue>();
  for (const q of queues) {
    const c = producerConnections.get(q);
    if (c && !byConnection.has(c)) byConnection.set(c, q);
  }
  try {
    await Promise.all([...byConnection].map(([c, q]) => withinQueueBound(q, () => c.ping(), timeoutMs)));
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs one call on `queue` for at most `timeoutMs`. Redis unreachable (the producer connection
 * refuses commands while it is not ready) or too slow becomes DependencyUnavailableError, so a
 * caller answers 503 with Retry-After or carries on without the job; an error Redis itself
 * answered while reachable is passed on unchanged.
 */
export async function withinQueueBound<T>(
  queue: Queue,
  call: () => Promise<T>,
  timeoutMs = ENQUEUE_TIMEOUT_MS,
): Promise<T> {
  try {
    return await withTimeout(call(), timeoutMs, 'a queue call');
  } catch (err) {
    if (!(err instanceof TimeoutError) && queueReady(queue)) throw err;
    throw new DependencyUnavailableError(QUEUE_DEPENDENCY, QUEUE_RETRY_AFTER_SECONDS, { cause: err });
  }
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map((q) => q.close()));
}

/**
 * Queues a settlement check for one payment. The job id is the payment's, so a payment has at
 * most one such job at a time; it is removed on completion so a later check can be queued again.
 * Bounded by ENQUEUE_TIMEOUT_MS (DependencyUnavailableError past it): the payment is durable in
 * PostgreSQL, so a check that could not be queued is queued by the reconciler later.
 */
export async function enqueueSettlement(queues: Queues, paymentId: string, delayMs = 1000): Promise<void> {
  await withinQueueBound(queues.payments, () =>
    queues.payments.add(
      'settle-payment',
      { paymentId },
      {
        jobId: `settle-${paymentId}`,
        delay: delayMs,
        attempts: 8,
        backoff: { type: 'exponential', delay: 2000 },
        // Removed when done either way: a later reconciler pass must be able to queue the payment again.
        removeOnComplete: true,
        removeOnFail: true,
      },
    ),
  );
}

/** BullMQ job ids may not contain ':'; slot ids are compact UTC minutes (202611210535). */
export function slotId(name: string, at: Date): string {
  const slot = at.toISOString().slice(0, 16).replace(/[-:T]/g, '');
  return `${name}-${slot}`;
}

/**
 * The priority of background jobs (BullMQ's: a job with any priority waits while a job without one
 * is waiting): bulk work that may be queued a million at a time must not hold back a job a request
 * or an event asked for. A queue busy with event jobs without end would hold background jobs back
 * as long; at that point the workers are short of capacity either way.
 */
export const BACKGROUND_PRIORITY = 1;

/** A job one of the service's loops asks for: its queue, name, payload, id and optional delay. */
export interface PlannedJob {
  queue: QueueName;
  name: string;
  data: Record<string, unknown>;
  jobId: string;
  delay?: number;
  /** Tries and backoff of its own, where the queue's defaults do not suit the job. */
  opts?: Pick<JobsOptions, 'attempts' | 'backoff'>;
}

/**
 * The window of `ms` that `now` falls in, named for a job id, and the delay that runs the job just
 * after the window closes (20 ms later): every request of one window asks for the same job, which
 * then sees every change made in the window.
 */
export function coalescingWindow(now: number, ms: number): { window: number; delay: number } {
  const window = Math.floor(now / ms);
  return { window, delay: (window + 1) * ms - now + 20 };
}

/**
 * A `documents` job about one agent, coalesced in windows of `windowMs`: every request in the
 * window `now` falls in maps to one job id (`<name>-<agent>-<window>`), and the job starts only
 * once the window has closed, so it reads after all of them.
 */
export function coalescedAgentJob(
  name: string,
  agentId: string,
  windowMs: number,
  now: number,
): PlannedJob & { delay: number } {
  const { window, delay } = coalescingWindow(now, windowMs);
  return { queue: 'documents', name, data: { agentId }, jobId: `${name}-${agentId}-${window}`, delay };
}

/**
 * Adds the jobs, one bulk command per queue. A job asked for twice in the list (the same id) is
 * sent once; an id Redis still holds is dropped by BullMQ, which makes coalescing by id work.
 */
export async function addPlannedJobs(queues: Queues, planned: PlannedJob[]): Promise<number> {
  const jobs = [...new Map(planned.map((j) => [j.jobId, j])).values()];
  for (const queue of new Set(jobs.map((j) => j.queue))) {
    await queues[queue].addBulk(
      jobs
        .filter((j) => j.queue === queue)
        .map((j) => ({
          name: j.name,
          data: j.data,
          opts: { ...j.opts, jobId: j.jobId, ...(j.delay ? { delay: j.delay } : {}) },
        })),
    );
  }
  return jobs.length;
}
