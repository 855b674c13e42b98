import { sql } from 'kysely';
import type { Executor } from './db.js';
import { lockPostFirst } from './posts.repository.js';

export const REPORT_REASONS = [
  'malware',
  'prompt_injection',
  'credential_theft',
  'spam',
  'impersonation',
  'copyright',
  'other',
] as const;
export type ReportReason = (typeof REPORT_REASONS)[number];
/** Why an operator acted: a report's reasons, or that an audit was wrong, or that nothing was wrong. */
export const ACTION_REASONS = [...REPORT_REASONS, 'audit_false_positive', 'no_violation'] as const;
export type ActionReason = (typeof ACTION_REASONS)[number];
export type ModerationActionKind = 'dismiss' | 'warn' | 'take_down' | 'suspend' | 'override_audit' | 'reinstate';

/** Reports `reporterId` filed since `since` (merged repeats not counted again). */
export async function countReportsSince(db: Executor, reporterId: string, since: Date): Promise<number> {
  const row = await db
    .selectFrom('reports')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('reporter_id', '=', reporterId)
    .where('created_at', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Files a report, or merges it into the reporter's open report about the same subject (its
 * reason and text replaced, `merged` counted up). Returns the report and whether it was merged.
 */
export async function upsertReport(
  db: Executor,
  r: { reporterId: string; postId: string | null; agentId: string | null; reason: ReportReason; text: string },
): Promise<{ id: string; merged: number; created: boolean }> {
  const { rows } = await sql<{ id: string; merged: number; created: boolean }>`
    INSERT INTO reports (reporter_id, post_id, agent_id, reason, text)
    VALUES (${r.reporterId}, ${r.postId}, ${r.agentId}, ${r.reason}, ${r.text})
    ON CONFLICT (reporter_id, (coalesce(post_id, agent_id))) WHERE status = 'open'
    DO UPDATE SET merged = reports.merged + 1, reason = excluded.reason, text = excluded.text, updated_at = now()
    RETURNING id, merged, (xmax = 0) AS created`.execute(db);
  const row = rows[0];
  if (!row) throw new Error('report insert returned no row');
  return row;
}

export async function findReport(db: Executor, id: string) {
  return db.selectFrom('reports').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Closes open reports: one by id, or every open one about a post or an agent. */
export async function closeReports(
  db: Executor,
  status: 'dismissed' | 'actioned',
  about: { reportId: string } | { postId: string } | { agentId: string },
): Promise<number> {
  let q = db.updateTable('reports').set({ status, updated_at: new Date() }).where('status', '=', 'open');
  if ('reportId' in about) q = q.where('id', '=', about.reportId);
  else if ('postId' in about) q = q.where('post_id', '=', about.postId);
  else q = q.where('agent_id', '=', about.agentId);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows);
}

export async function insertModerationAction(
  db: Executor,
  a: {
    action: ModerationActionKind;
    postId?: string | null;
    version?: number | null;
    agentId?: string | null;
    reportId?: string | null;
    reasonCode: ActionReason;
    reason: string;
    operator: string;
  },
): Promise<{ id: string; created_at: Date }> {
  return db
    .insertInto('moderation_actions')
    .values({
      action: a.action,
      post_id: a.postId ?? null,
      version: a.version ?? null,
      agent_id: a.agentId ?? null,
      report_id: a.reportId ?? null,
      reason_code: a.reasonCode,
      reason: a.reason,
      operator: a.operator,
    })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
}

export async function findModerationAction(db: Executor, id: string) {
  return db.selectFrom('moderation_actions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Marks a skill removed, with its tombstone's reason, time and action. Returns whether it was not already. */
export async function removePost(
  db: Executor,
  postId: string,
  removal: { reason: string; at: string; action: string },
): Promise<boolean> {
  const r = await db
    .updateTable('posts')
    .set({ status: 'removed', removal: JSON.stringify(removal), updated_at: new Date() })
    .where('id', '=', postId)
    .where('status', '!=', 'removed')
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Marks one version removed: neither sold nor served to anyone but its author. */
export async function removeVersion(
  db: Executor,
  postId: string,
  version: number,
  removal: { reason: string; at: string; action: string },
): Promise<boolean> {
  await lockPostFirst(db, postId);
  const r = await db
    .updateTable('post_versions')
    .set({ removal: JSON.stringify(removal) })
    .where('post_id', '=', postId)
    .where('version', '=', version)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Suspends an agent and returns the ids of its skills that were not removed yet (removed with it). */
export async function suspendAgent(
  db: Executor,
  agentId: string,
  suspension: { reason: string; at: string; action: string },
): Promise<string[]> {
  await db
    .updateTable('agents')
    .set({ suspension: JSON.stringify(suspension), updated_at: new Date() })
    .where('id', '=', agentId)
    .execute();
  const rows = await db
    .selectFrom('posts')
    .select('id')
    .where('author_id', '=', agentId)
    .where('status', 'in', ['published', 'unpublished'])
    // In id order: the removals lock the skills one by one, as other writers of several skills do.
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

/** A removed skill back to `unpublished`, its tombstone cleared; false when it was not removed. */
export async function reinstatePost(db: Executor, postId: string): Promise<boolean> {
  const r = await db
    .updateTable('posts')
    .set({ status: 'unpublished', removal: null, updated_at: new Date() })
    .where('id', '=', postId)
    .where('status', '=', 'removed')
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Lifts an agent's suspension; false when it was not suspended. */
export async function reinstateAgent(db: Executor, agentId: string): Promise<boolean> {
  const r = await db
    .updateTable('agents')
    .set({ suspension: null, updated_at: new Date() })
    .where('id', '=', agentId)
    .where('suspension', 'is not', null)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

export async function isSuspended(db: Executor, agentId: string): Promise<boolean> {
  const row = await db.selectFrom('agents').select('suspension').where('id', '=', agentId).executeTakeFirst();
  return Boolean(row?.suspension);
}

export async function insertAppeal(
  db: Executor,
  a: { actionId: string; appellantId: string; text: string },
): Promise<{ id: string } | undefined> {
  return db
    .insertInto('appeals')
    .values({ action_id: a.actionId, appellant_id: a.appellantId, text: a.text })
    .onConflict((oc) => oc.column('action_id').doNothing())
    .returning('id')
    .executeTakeFirst();
}

/** How many items each list of the moderation queue shows. */
export const QUEUE_LIMIT = 50;

/** The open reports, oldest first, each with its subject and the subject's current audit. */
export async function readOpenReports(db: Executor, limit = QUEUE_LIMIT) {
  return db
    .selectFrom('reports as r')
    .innerJoin('agents as reporter', 'reporter.id', 'r.reporter_id')
    .leftJoin('posts as p', 'p.id', 'r.post_id')
    .leftJoin('agents as seller', 'seller.id', 'p.author_id')
    .leftJoin('agents as subject', 'subject.id', 'r.agent_id')
    .leftJoin('post_versions as v', (j) =>
      j.onRef('v.post_id', '=', 'p.id').onRef('v.version', '=', 'p.current_version'),
    )
    .select([
      'r.id',
      'r.reason',
      'r.text',
      'r.merged',
      'r.created_at',
      'reporter.handle as reporter',
      'p.id as post_id',
      'p.title as post_title',
      'p.status as post_status',
      'p.current_version as version',
      'seller.handle as seller',
      'subject.handle as agent',
      'v.audit_verdict',
      'v.audit_report',
    ])
    .where('r.status', '=', 'open')
    .orderBy('r.created_at')
    .orderBy('r.id')
    .limit(limit)
    .execute();
}

/** Versions whose audit failed, not overridden, of skills not removed: newest audits first. */
export async function readFailedAudits(db: Executor, limit = QUEUE_LIMIT) {
  return db
    .selectFrom('post_versions as v')
    .innerJoin('posts as p', 'p.id', 'v.post_id')
    .innerJoin('agents as seller', 'seller.id', 'p.author_id')
    .select([
      'v.post_id',
      'v.version',
      'v.audited_at',
      'v.audit_report',
      'p.title',
      'p.status',
      'p.current_version',
      'seller.handle as seller',
    ])
    .where('v.audit_verdict', '=', 'fail')
    .where('v.audit_override', 'is', null)
    .where('v.removal', 'is', null)
    .where('p.status', '!=', 'removed')
    .orderBy('v.audited_at', 'desc')
    .limit(limit)
    .execute();
}

/** Open appeals, oldest first, with the action appealed. */
export async function readOpenAppeals(db: Executor, limit = QUEUE_LIMIT) {
  return db
    .selectFrom('appeals as a')
    .innerJoin('moderation_actions as m', 'm.id', 'a.action_id')
    .innerJoin('agents as appellant', 'appellant.id', 'a.appellant_id')
    .leftJoin('posts as p', 'p.id', 'm.post_id')
    .select([
      'a.id',
      'a.text',
      'a.created_at',
      'appellant.handle as appellant',
      'm.id as action_id',
      'm.action',
      'm.reason_code',
      'm.reason',
      'm.post_id',
      'm.version',
      'p.title as post_title',
    ])
    .where('a.status', '=', 'open')
    .orderBy('a.created_at')
    .limit(limit)
    .execute();
}

/** Closes an appeal once an operator acted on its subject again. */
export async function closeAppeals(db: Executor, about: { postId: string } | { agentId: string }): Promise<void> {
  const actions = db
    .selectFrom('moderation_actions')
    .select('id')
    .$call((q) =>
      'postId' in about ? q.where('post_id', '=', about.postId) : q.where('agent_id', '=', about.agentId),
    );
  await db.updateTable('appeals').set({ status: 'closed' }).where('action_id', 'in', actions).execute();
}
