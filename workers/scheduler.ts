import cron from 'node-cron';
import type { Logger } from '../src/platform/logger.js';
import { slotId, type Queues } from '../src/platform/queues.js';

export interface ScheduledJob {
  name: string;
  queue: keyof Queues;
  cron: string;
  /** Enqueue once at start too, so a fresh deployment publishes without waiting for the first tick. */
  runAtStart: boolean;
}

/**
 * node-cron ticks enqueue jobs whose id is the job name plus the tick's minute. Every scheduler
 * replica computes the same id for the same tick, and BullMQ keeps one job per id, so running
 * several schedulers never runs a tick twice.
 */
export function startScheduler(queues: Queues, schedule: ScheduledJob[], log: Logger) {
  const enqueue = async (job: ScheduledJob, at: Date) => {
    const jobId = slotId(job.name, at);
    await queues[job.queue].add(job.name, {}, { jobId });
    log.debug({ job: job.name, jobId }, 'scheduled job enqueued');
  };
  const tasks = schedule.map((job) =>
    cron.schedule(job.cron, (ctx) => {
      enqueue(job, ctx?.triggeredAt ?? new Date()).catch((err) => log.error({ err, job: job.name }, 'enqueue failed'));
    }, { name: job.name, noOverlap: true }),
  );
  const ready = Promise.all(
    schedule.filter((j) => j.runAtStart).map((j) => enqueue(j, new Date())),
  );
  return {
    ready,
    async stop() {
      await Promise.all(tasks.map((t) => t.stop()));
    },
  };
}
