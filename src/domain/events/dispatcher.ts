import { sql } from 'kysely';
import type { Db } from '../../data/db.js';
import type { Logger } from '../../platform/logger.js';
import type { Queues, QueueName } from '../../platform/queues.js';
import { backoff } from '../../platform/backoff.js';

interface DomainEvent {
  id: string;
  type: string;
  agent_id: string | null;
  post_id: string | null;
}

export interface PlannedJob {
  queue: QueueName;
  name: string;
  data: Record<string, unknown>;
  jobId: string;
  delay?: number;
}

/** How long per-agent recomputes triggered by a burst of events are coalesced. */
export const AGENT_RECOMPUTE_COALESCE_MS = 250;

/**
 * Which recomputations an event asks for. Jobs are idempotent, so an event dispatched twice
 * (a crash between enqueue and bookkeeping) only renders the same documents again.
 */
export function jobsFor(e: DomainEvent, now = Date.now()): PlannedJob[] {
  const jobs: PlannedJob[] = [];
  if (e.post_id && e.type.startsWith('post.')) {
    jobs.push({
      queue: 'documents',
      name: 'post-manifest',
      data: { postId: e.post_id },
      jobId: `post-manifest-${e.post_id}-${e.id}`,
    });
  }
  // Anything about an agent (its profile, its skills, its sales) changes its documents. A burst
  // becomes one recompute: every event dispatched in the same 250 ms window maps to one job id,
  // and the job runs after the window closes, so it sees every change of the window (events are
  // dispatched only after their transaction committed). The next window gets its own job.
  if (e.agent_id) {
    const window = Math.floor(now / AGENT_RECOMPUTE_COALESCE_MS);
    jobs.push({
      queue: 'documents',
      name: 'agent-documents',
      data: { agentId: e.agent_id },
      jobId: `agent-documents-${e.agent_id}-${window}`,
      delay: (window + 1) * AGENT_RECOMPUTE_COALESCE_MS - now + 20,
    });
  }
  return jobs;
}

/**
 * The outbox dispatcher: leases undispatched domain events for 30 s (SKIP LOCKED, so any number
 * of workers can run it), enqueues the jobs they call for, then marks them dispatched. If Redis
 * refuses, the lease is given back; if the process dies, the lease runs out and another
 * dispatcher takes them. Jobs are idempotent, so the rare double dispatch is harmless. No
 * database transaction is open while Redis is called.
 */
export function startEventDispatcher(db: Db, queues: Queues, log: Logger, intervalMs = 200) {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const tick = async (): Promise<number> => {
    const claimed = await sql<DomainEvent>`
      UPDATE domain_events SET claimed_until = now() + interval '30 seconds'
      WHERE id IN (
        SELECT id FROM domain_events
        WHERE dispatched_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
        ORDER BY id LIMIT 200 FOR UPDATE SKIP LOCKED)
      RETURNING id, type, agent_id, post_id`.execute(db);
    const events = claimed.rows;
    if (!events.length) return 0;
    const now = Date.now();
    const jobs = events.flatMap((e) => jobsFor(e, now));
    try {
      for (const queue of new Set(jobs.map((j) => j.queue))) {
        await queues[queue].addBulk(
          jobs
            .filter((j) => j.queue === queue)
            .map((j) => ({
              name: j.name,
              data: j.data,
              opts: { jobId: j.jobId, ...(j.delay ? { delay: j.delay } : {}) },
            })),
        );
      }
    } catch (err) {
      await db
        .updateTable('domain_events')
        .set({ claimed_until: null })
        .where(
          'id',
          'in',
          events.map((e) => e.id),
        )
        .execute();
      throw err;
    }
    await db
      .updateTable('domain_events')
      .set({ dispatched_at: new Date() })
      .where(
        'id',
        'in',
        events.map((e) => e.id),
      )
      .execute();
    log.debug({ events: events.length, jobs: jobs.length }, 'domain events dispatched');
    return events.length;
  };

  // Consecutive failed ticks: polls back off while the database or Redis is down, and resume
  // their pace on the first success.
  let failures = 0;
  const loop = async () => {
    if (stopped) return;
    let handled = 0;
    try {
      handled = await tick();
      if (failures) log.info({ failures }, 'event dispatch recovered');
      failures = 0;
    } catch (err) {
      failures++;
      log.warn({ err, failures }, 'event dispatch failed; retrying');
    }
    const delay = failures ? backoff(intervalMs, failures) : handled >= 200 ? 0 : intervalMs;
    if (!stopped) timer = setTimeout(() => (running = loop()), delay);
  };
  running = loop();

  return {
    /** Dispatches what is pending now (tests and shutdown use it). */
    flush: () => tick(),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
