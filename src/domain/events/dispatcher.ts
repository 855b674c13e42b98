import type { Db } from '../../data/db.js';
import {
  claimPendingEvents,
  markEventsDispatched,
  releaseEventClaims,
  type DomainEventRow,
} from '../../data/events.repository.js';
import type { Logger } from '../../platform/logger.js';
import { auditJobId } from '../posts/version-audit.use-cases.js';
import { addPlannedJobs, coalescedAgentJob, type PlannedJob, type Queues } from '../../platform/queues.js';
import { FANOUT_JOB, FANOUT_JOB_OPTIONS } from '../webhooks/deliveries.use-cases.js';
import { WEBHOOK_SOURCE_EVENTS } from '../webhooks/webhook-events.js';
import { analyticsJobsFor } from '../analytics/analytics.use-cases.js';

/** How long per-agent recomputes triggered by a burst of events are coalesced. */
export const AGENT_RECOMPUTE_COALESCE_MS = 250;
/** The most events one dispatch pass claims; a full batch means more may be waiting. */
export const DISPATCH_BATCH = 200;

/**
 * Events about an agent that change none of its documents (they are told by webhook, and the
 * skill's own read models follow its rows): no recompute of the agent is queued for them.
 */
const KEEPS_AGENT_DOCUMENTS: ReadonlySet<string> = new Set([
  'payment.failed',
  'post.audited',
  'report.filed',
  'document.published',
]);

/**
 * Which recomputations an event asks for: an agent's documents (score, card, badges, health,
 * reputation). A skill's own read models (feeds, Bazaar listing, manifest, page, skills index)
 * follow its rows' change_txid instead (src/domain/projections, docs/projections.md). Jobs are
 * idempotent, so an event dispatched twice (a crash between enqueue and bookkeeping) only renders
 * the same documents again.
 */
export function jobsFor(e: DomainEventRow, now = Date.now()): PlannedJob[] {
  const jobs: PlannedJob[] = [];
  // Anything about an agent (its profile, its skills, its sales) changes its documents. A burst
  // becomes one recompute: every event dispatched in the same 250 ms window maps to one job id,
  // and the job runs after the window closes, so it sees every change of the window (events are
  // dispatched only after their transaction committed). The next window gets its own job.
  if (e.agent_id && !KEEPS_AGENT_DOCUMENTS.has(e.type))
    jobs.push(coalescedAgentJob('agent-documents', e.agent_id, AGENT_RECOMPUTE_COALESCE_MS, now));
  // A new version is audited (its skill's read models show the verdict once it is stored).
  const version = auditedVersionOf(e);
  if (e.post_id && version !== undefined)
    jobs.push({
      queue: 'documents',
      name: 'skill-audit',
      data: { postId: e.post_id, version },
      jobId: auditJobId(e.post_id, version),
    });
  // What agents hear of by webhook is sent by a fan-out job, never by the request that wrote it
  // (docs/webhooks.md); one fan-out per event, whatever the number of dispatches.
  if (WEBHOOK_SOURCE_EVENTS.has(e.type))
    jobs.push({
      queue: 'webhooks',
      name: FANOUT_JOB,
      data: { eventId: e.id },
      jobId: `${FANOUT_JOB}-${e.id}`,
      opts: FANOUT_JOB_OPTIONS,
    });
  return jobs;
}

/** The version an event created, which the audit reads: version 1 with the post, later ones as added. */
function auditedVersionOf(e: DomainEventRow): number | undefined {
  if (e.type === 'post.created') return 1;
  if (e.type !== 'post.version_added') return undefined;
  const version = (e.payload as { version?: unknown } | null)?.version;
  return typeof version === 'number' ? version : undefined;
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
  let jobs = 0;
  try {
    // A burst asks for the same coalesced job many times (one id per agent and window): sent once.
    jobs = await addPlannedJobs(
      queues,
      events.flatMap((e) => [...jobsFor(e, now), ...analyticsJobsFor(e, now)]),
    );
  } catch (err) {
    await releaseEventClaims(db, ids);
    throw err;
  }
  await markEventsDispatched(db, ids);
  log.debug({ events: events.length, jobs }, 'domain events dispatched');
  return events.length;
}
