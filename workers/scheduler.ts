import { randomBytes } from 'node:crypto';
import cron from 'node-cron';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../src/platform/logger.js';
import type { Metrics } from '../src/platform/metrics.js';
import { backoff } from '../src/platform/backoff.js';
import { slotId, type Queues } from '../src/platform/queues.js';

export interface ScheduledJob {
  name: string;
  queue: keyof Queues;
  cron: string;
  /**
   * Enqueue at every start too, so a start publishes without waiting for the first tick, under a
   * job id of that start's own (see startScheduler).
   */
  runAtStart: boolean;
}

/**
 * How long a tick that Redis refused (down or reconnecting: the producer connection fails at once)
 * is tried again. Under a minute, so an every-minute job never has two ticks in retry; an outage
 * longer than this loses its ticks, and the first tick after it runs the job.
 */
const TICK_RETRY_FOR_MS = 50_000;
const TICK_RETRY_BASE_MS = 1_000;

/**
 * node-cron ticks enqueue jobs whose id is the job name plus the tick's minute. Every scheduler
 * replica computes the same id for the same tick, and BullMQ keeps one job per id, so running
 * several schedulers never runs a tick twice.
 */
export function startScheduler(queues: Queues, schedule: ScheduledJob[], log: Logger, metrics?: Metrics) {
  const enqueue = async (job: ScheduledJob, at: Date, jobId = slotId(job.name, at)) => {
    await queues[job.queue].add(job.name, {}, { jobId });
    metrics?.scheduledTicks.inc({ name: job.name, outcome: 'enqueued' });
    log.debug({ job: job.name, jobId }, 'scheduled job enqueued');
  };
  const stopped = new AbortController();
  // The job id is the tick's, so a retry that lands after Redis took the first try is dropped.
  const enqueueRetrying = async (job: ScheduledJob, at: Date) => {
    const deadline = Date.now() + TICK_RETRY_FOR_MS;
    for (let failures = 1; ; failures++) {
      try {
        await enqueue(job, at);
        if (failures > 1) log.info({ job: job.name, retries: failures - 1 }, 'scheduled job enqueued after retries');
        return;
      } catch (err) {
        const pause = backoff(TICK_RETRY_BASE_MS, failures);
        if (stopped.signal.aborted) return;
        if (Date.now() + pause > deadline) throw err;
        if (failures === 1) log.warn({ err, job: job.name }, 'enqueue failed; retrying');
        await sleep(pause, undefined, { signal: stopped.signal }).catch(() => undefined);
      }
    }
  };
  const tasks = schedule.map((job) =>
    cron.schedule(
      job.cron,
      (ctx) => {
        enqueueRetrying(job, ctx?.triggeredAt ?? new Date()).catch((err) => {
          metrics?.scheduledTicks.inc({ name: job.name, outcome: 'failed' });
          log.error({ err, job: job.name }, 'enqueue failed; the next tick runs the job');
        });
      },
      { name: job.name, noOverlap: true },
    ),
  );
  // A start's jobs get ids of that start's own, never the minute's: BullMQ keeps completed jobs
  // for an hour, so a process restarted within the minute found its start-up jobs dropped as
  // copies of the previous run's. The site card then kept naming the previous run's receipt key
  // and the population figures were not recomputed; a process restarted after a crash left its
  // payments in flight to the next tick. Several schedulers starting together each run them
  // once: the jobs are idempotent and a publish that changes nothing writes nothing.
  const startRun = `start${process.pid}x${Date.now().toString(36)}x${randomBytes(4).toString('hex')}`;
  const ready = Promise.all(
    schedule
      .filter((j) => j.runAtStart)
      .map((j) => enqueue(j, new Date(), `${slotId(j.name, new Date())}-${startRun}`)),
  );
  return {
    ready,
    async stop() {
      stopped.abort();
      await Promise.all(tasks.map((t) => t.stop()));
    },
  };
}
