import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { JOBS } from '../jobs/index.js';
import { RunAgainLater, type JobContext } from '../jobs/job.js';
import type { Metrics } from '../src/platform/metrics.js';
import { AppError } from '../src/platform/errors.js';
import { QUEUE_NAMES } from '../src/platform/queues.js';
import { webhookBackoff } from '../jobs/webhook-delivery.job.js';

/** The most often one queue's worker errors are logged; the workers resume by themselves once Redis is back. */
const ERROR_LOG_EVERY_MS = 30_000;

export interface WorkerOptions {
  connection: () => Redis;
  prefix: string;
  concurrency: number;
  metrics: Metrics;
}

/**
 * One BullMQ worker per queue, each dispatching by job name to the job's handler. A payload that
 * does not parse, an unknown job name and a client-class AppError are permanent failures; anything
 * else is retried with the queue's backoff.
 */
export function startWorkers(ctx: JobContext, opts: WorkerOptions) {
  const workers = QUEUE_NAMES.map((queue) => {
    const worker = new Worker(
      queue,
      async (job: Job, token?: string) => {
        const def = JOBS[job.name];
        if (!def || def.queue !== queue) throw new UnrecoverableError(`unknown job ${job.name} on queue ${queue}`);
        const payload = def.payload.safeParse(job.data ?? {});
        if (!payload.success) throw new UnrecoverableError(`invalid payload for ${job.name}: ${payload.error.message}`);
        const started = performance.now();
        const log = ctx.log.child({ queue, job: job.name, jobId: job.id, attempt: job.attemptsMade + 1 });
        try {
          const result = await def.run({ ...ctx, log, progress: (value) => job.updateProgress(value) }, payload.data);
          const ms = performance.now() - started;
          opts.metrics.jobDuration.observe({ queue, name: job.name, outcome: 'completed' }, ms / 1000);
          log.info({ ms: Math.round(ms * 10) / 10, result }, 'job completed');
          return result ?? null;
        } catch (err) {
          if (err instanceof RunAgainLater && token) {
            log.debug({ inMs: err.ms }, 'job runs again later');
            await job.moveToDelayed(Date.now() + err.ms, token);
            throw new DelayedError();
          }
          const ms = performance.now() - started;
          opts.metrics.jobDuration.observe({ queue, name: job.name, outcome: 'failed' }, ms / 1000);
          opts.metrics.jobFailures.inc({ queue, name: job.name });
          log.warn({ ms: Math.round(ms), err }, 'job failed');
          if (err instanceof AppError && !err.retryable) throw new UnrecoverableError(err.message);
          throw err;
        }
      },
      {
        connection: opts.connection(),
        prefix: opts.prefix,
        concurrency: opts.concurrency,
        autorun: true,
        // Webhook deliveries wait the delay their schedule drew (docs/webhooks.md); other jobs use
        // BullMQ's built-in exponential backoff and never reach this.
        settings: { backoffStrategy: webhookBackoff },
      },
    );
    // While Redis is away every reconnect attempt of each of the worker's connections is an error
    // event: one line per queue per ERROR_LOG_EVERY_MS, with the count of those left out.
    let loggedAt = -Infinity;
    let unlogged = 0;
    worker.on('error', (err) => {
      const now = performance.now();
      if (now - loggedAt < ERROR_LOG_EVERY_MS) {
        unlogged++;
        return;
      }
      ctx.log.error({ err, queue, unlogged }, 'worker error');
      loggedAt = now;
      unlogged = 0;
    });
    // A job whose lock expired (its worker stopped renewing it: a crash, or an event loop blocked
    // past the lock's 30 s) is run again by whichever worker picks it up.
    worker.on('stalled', (jobId) => ctx.log.warn({ queue, jobId }, 'job stalled: its lock expired, it will run again'));
    return worker;
  });
  return {
    workers,
    /** Stops taking jobs and waits for the running ones to finish. */
    async close() {
      await Promise.all(workers.map((w) => w.close()));
    },
    /**
     * Drops every Redis connection of the workers at once, for when `close` did not finish in time
     * (a job still running, or Redis not answering). A job still running is abandoned: its lock
     * expires and a worker runs it again (jobs are idempotent).
     */
    async disconnect() {
      await Promise.all(workers.map((w) => w.disconnect()));
    },
  };
}
