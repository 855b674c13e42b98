import type { Db } from '../../data/db.js';
import {
  claimPendingEvents,
  markEventsDispatched,
  releaseEventClaims,
  type DomainEventRow,
} from '../../data/events.repository.js';
import type { Logger } from '../../platform/logger.js';
import type { Queues, QueueName } from '../../platform/queues.js';

export interface PlannedJob {
  queue: QueueName;
  name: string;
  data: Record<string, unknown>;
  jobId: string;
  delay?: number;
}

/** How long per-agent recomputes triggered by a burst of events are coalesced. */
export const AGENT_RECOMPUTE_COALESCE_MS = 250;
/** How long the sales of one skill gather before its page is published again with them. */
export const SKILL_PAGE_SALES_COALESCE_MS = 5_000;

/** The most events one dispatch pass claims; a full batch means more may be waiting. */
export const DISPATCH_BATCH = 200;

/** The post events that change what /.well-known/agent-skills/index.json lists. */
const SKILLS_INDEX_EVENTS = new Set([
  'post.published',
  'post.updated',
  'post.unpublished',
  'post.version_added',
  'post.version_signed',
]);

/**
 * Which recomputations an event asks for. Jobs are idempotent, so an event dispatched twice
 * (a crash between enqueue and bookkeeping) only renders the same documents again.
 */
export function jobsFor(e: DomainEventRow, now = Date.now()): PlannedJob[] {
  const jobs: PlannedJob[] = [];
  if (e.post_id && e.type.startsWith('post.')) {
    jobs.push({
      queue: 'documents',
      name: 'post-manifest',
      data: { postId: e.post_id },
      jobId: `post-manifest-${e.post_id}-${e.id}`,
    });
  }
  // A sale changes the skill page's sales and buyers: the sales of one skill in a 5 s window
  // become one publish. People read the page; a count a few seconds behind costs them nothing,
  // while a publish per sale (its manifest re-rendered and re-digested) would take the API
  // process's time on the paid path when the worker shares it.
  if (e.post_id && e.type === 'purchase.settled') {
    const window = Math.floor(now / SKILL_PAGE_SALES_COALESCE_MS);
    jobs.push({
      queue: 'documents',
      name: 'post-manifest',
      data: { postId: e.post_id },
      jobId: `post-manifest-${e.post_id}-sales-${window}`,
      delay: (window + 1) * SKILL_PAGE_SALES_COALESCE_MS - now + 20,
    });
  }
  // The discovery index lists every published skill: a burst of changes becomes one publish per
  // 250 ms window, as for the agent documents below.
  if (e.post_id && SKILLS_INDEX_EVENTS.has(e.type)) {
    const window = Math.floor(now / AGENT_RECOMPUTE_COALESCE_MS);
    jobs.push({
      queue: 'documents',
      name: 'skills-index',
      data: {},
      jobId: `skills-index-${window}`,
      delay: (window + 1) * AGENT_RECOMPUTE_COALESCE_MS - now + 20,
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
 * One pass of the outbox dispatcher: claims up to DISPATCH_BATCH undispatched domain events,
 * enqueues the jobs they call for, then marks them dispatched. If Redis refuses, the claim is
 * given back and the error thrown; if the process dies, the claim runs out and another dispatcher
 * takes them. Jobs are idempotent, so the rare double dispatch is harmless. No database
 * transaction is open while Redis is called. Returns how many events were dispatched.
 */
export async function dispatchPendingEvents(db: Db, queues: Queues, log: Logger): Promise<number> {
  const events = await claimPendingEvents(db, DISPATCH_BATCH);
  if (!events.length) return 0;
  const ids = events.map((e) => e.id);
  const now = Date.now();
  // A burst asks for the same coalesced job many times (one id per agent and window): sent once.
  const jobs = [...new Map(events.flatMap((e) => jobsFor(e, now)).map((j) => [j.jobId, j])).values()];
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
    await releaseEventClaims(db, ids);
    throw err;
  }
  await markEventsDispatched(db, ids);
  log.debug({ events: events.length, jobs: jobs.length }, 'domain events dispatched');
  return events.length;
}
