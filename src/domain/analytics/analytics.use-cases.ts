import type { Db, Executor } from '../../data/db.js';
import { findAgentById } from '../../data/agents.repository.js';
import {
  attemptsByPost,
  findAgentAnalytics,
  funnelCounts,
  pruneFunnelCounts,
  pruneSellerDays,
  sealSellerDays,
  trySealLock,
  saveAgentAnalytics,
  sellerRatingsByWeek,
  sellerRefunds,
  sellerBuyers,
  sellerSalesByDay,
  sellerSkills,
} from '../../data/analytics.repository.js';
import { coalescedAgentJob, type PlannedJob } from '../../platform/queues.js';
import {
  ANALYTICS_DAYS,
  ANALYTICS_MAX_SKILLS,
  AnalyticsDocument,
  buildAnalyticsDocument,
  windowStart,
} from './analytics-document.js';

/** How often the API processes add their counters to the database. */
export const COUNTER_FLUSH_MS = 5_000;
/** A burst of sales or flushes for one seller becomes one analytics job per window. */
export const ANALYTICS_COALESCE_MS = 5_000;
/** Counted days are kept this long (the documents read ANALYTICS_DAYS). */
const KEEP_DAYS = ANALYTICS_DAYS + 30;
/**
 * Days this far back are sealed (summed once, then read from their sums): no transaction still
 * running can insert a purchase or a payment dated then, since those are dated when their
 * transaction starts.
 */
const SEAL_AFTER_DAYS = 2;

/**
 * Computes an agent's analytics document from the counters and the ledger, and stores it. Every
 * read is bounded: one agent's newest skills, the last ANALYTICS_DAYS days, on indexed columns;
 * the ledger's days before the last SEAL_AFTER_DAYS are summed once into sealed days
 * (`sealSellerDays`) and read from there, so a run reads the seller's last two days of sales, not
 * its 90. Idempotent: the same rows give the same document. Undefined for an unknown agent.
 */
export async function refreshAgentAnalytics(
  db: Db,
  agentId: string,
  now = new Date(),
): Promise<AnalyticsDocument | undefined> {
  const agent = await findAgentById(db, agentId);
  if (!agent) return undefined;
  const from = windowStart(now);
  const keepFrom = windowStart(now, KEEP_DAYS);
  await sealDays(db, agentId, windowStart(now, SEAL_AFTER_DAYS + 1), keepFrom);
  const skills = await sellerSkills(db, agentId, ANALYTICS_MAX_SKILLS);
  const ids = skills.map((s) => s.id);
  const [counts, attempts, sales, buyers, refunds, ratings] = await Promise.all([
    funnelCounts(db, ids, from),
    attemptsByPost(db, agentId, ids, from),
    sellerSalesByDay(db, agentId, from),
    sellerBuyers(db, agentId, from),
    sellerRefunds(db, agentId, from),
    sellerRatingsByWeek(db, agentId, from),
  ]);
  const document = buildAnalyticsDocument(
    {
      agent: { id: agent.id, handle: agent.handle },
      skills,
      counts,
      attempts,
      sales,
      buyers,
      refunds,
      ratings,
      flushIntervalMs: COUNTER_FLUSH_MS,
    },
    now,
  );
  await saveAgentAnalytics(db, agentId, document);
  await pruneFunnelCounts(db, ids, keepFrom);
  await pruneSellerDays(db, agentId, keepFrom);
  return document;
}

/**
 * Seals the seller's days through `through`, a statement of at most 31 days per transaction (so no
 * lock its inserts take on the seller's rows is held for a whole history), unless another run is
 * sealing them: that run seals them, and this one reads the days not sealed yet from the ledger
 * (the reads are exact either way).
 */
async function sealDays(db: Db, agentId: string, through: string, keepFrom: string): Promise<void> {
  const sealNext = async (trx: Executor) =>
    (await trySealLock(trx, agentId)) && (await sealSellerDays(trx, agentId, through, keepFrom));
  for (;;) {
    const more = db.isTransaction ? await sealNext(db) : await db.transaction().execute(sealNext);
    if (!more) return;
  }
}

/**
 * A stored document older than this is computed again when read: a seller with no sale, refund,
 * review or counted view for a while still sees its 90 days end today.
 */
export const ANALYTICS_STALE_MS = 10 * 60_000;

/**
 * The agent's analytics document as the job last stored it; computed now when the job has not run
 * for this agent yet (a new seller, so the first read never answers empty) or ran more than
 * ANALYTICS_STALE_MS ago.
 */
export async function readAgentAnalytics(
  db: Db,
  agentId: string,
  now = new Date(),
): Promise<AnalyticsDocument | undefined> {
  const stored = await findAgentAnalytics(db, agentId);
  if (stored && now.getTime() - new Date(stored.computed_at).getTime() < ANALYTICS_STALE_MS) {
    const parsed = AnalyticsDocument.safeParse(stored.document);
    if (parsed.success) return parsed.data;
  }
  return refreshAgentAnalytics(db, agentId, now);
}

/** The analytics job of one seller, coalesced: every request of one window asks for the same job id. */
export function analyticsJob(agentId: string, now = Date.now()): PlannedJob {
  return coalescedAgentJob('agent-analytics', agentId, ANALYTICS_COALESCE_MS, now);
}

/** The domain events that change a seller's sales, refunds or ratings. */
const SELLER_EVENTS = /^(purchase\.|refund\.|review\.)/;

/** The analytics refresh a domain event asks for: its seller's, for a sale, a refund or a review. */
export function analyticsJobsFor(e: { type: string; agent_id: string | null }, now = Date.now()): PlannedJob[] {
  return e.agent_id && SELLER_EVENTS.test(e.type) ? [analyticsJob(e.agent_id, now)] : [];
}
