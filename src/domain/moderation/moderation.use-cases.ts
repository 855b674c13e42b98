import { findAgentByHandle, findAgentById } from '../../data/agents.repository.js';
import { findVersionToAudit, setAuditOverride } from '../../data/audits.repository.js';
import type { Db, Executor } from '../../data/db.js';
import { insertEvent } from '../../data/events.repository.js';
import {
  type ActionReason,
  closeAppeals,
  closeReports,
  countReportsSince,
  findModerationAction,
  findReport,
  insertAppeal,
  insertModerationAction,
  type ModerationActionKind,
  readFailedAudits,
  readOpenAppeals,
  readOpenReports,
  reinstateAgent,
  reinstatePost,
  removePost,
  removeVersion,
  type ReportReason,
  suspendAgent,
  upsertReport,
} from '../../data/moderation.repository.js';
import { findPostWithAuthor } from '../../data/posts.repository.js';
import { storedAudit } from '../../documents/posts/skill-audit.document.js';
import { postManifestDocument } from '../../documents/posts/post-manifest.document.js';
import { skillPageDocument } from '../../documents/pages/pages.document.js';
import { removeDocument } from '../publishing/publish-document.js';
import { publicArtifactKeys } from '../skills/skill-snapshots.js';
import { AppError, ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../platform/errors.js';
import { syncSearchTier } from '../discovery/search-tier.js';
import { auditKeysOf, publishAudit, type VersionAuditDeps } from '../posts/version-audit.use-cases.js';

/** Reports one agent may file per REPORT_WINDOW_MS (a repeat merged into an open report is not a new one). */
export const REPORTS_PER_WINDOW = 10;
export const REPORT_WINDOW_MS = 3_600_000;

/** What a report is about: a skill by id, or an agent by handle. */
export type ReportSubject = { postId: string } | { agentHandle: string };

/**
 * Files a registered agent's report about a skill or an agent. A seller cannot report its own
 * skill, nor an agent itself (403 `own_subject_report`); drafts are unknown (404); a second report
 * by the same reporter about the same subject while the first is open is merged into it; more than
 * REPORTS_PER_WINDOW an hour is 429 `report_rate_limited`.
 */
export async function fileReport(
  db: Db,
  reporterId: string,
  input: { subject: ReportSubject; reason: ReportReason; text: string },
  now = new Date(),
) {
  let postId: string | null = null;
  let agentId: string | null = null;
  /** The agent the report is about: the skill's seller, or the agent reported. */
  let subjectAgentId: string;
  if ('postId' in input.subject) {
    const post = await findPostWithAuthor(db, input.subject.postId);
    if (!post || post.status === 'draft') throw new NotFoundError(`Post ${input.subject.postId}`, 'post_not_found');
    if (post.author_id === reporterId)
      throw new ForbiddenError('A seller cannot report its own skill', 'own_subject_report');
    postId = post.id;
    subjectAgentId = post.author_id;
  } else {
    const agent = await findAgentByHandle(db, input.subject.agentHandle);
    if (!agent) throw new NotFoundError(`Agent ${input.subject.agentHandle}`, 'agent_not_found');
    if (agent.id === reporterId) throw new ForbiddenError('An agent cannot report itself', 'own_subject_report');
    agentId = agent.id;
    subjectAgentId = agent.id;
  }
  const recent = await countReportsSince(db, reporterId, new Date(now.getTime() - REPORT_WINDOW_MS));
  if (recent >= REPORTS_PER_WINDOW)
    throw new AppError(
      429,
      'report_rate_limited',
      `At most ${REPORTS_PER_WINDOW} reports an hour per agent; try again later`,
      { retryAfterSeconds: Math.ceil(REPORT_WINDOW_MS / 1000) },
    );
  const report = await db.transaction().execute(async (trx) => {
    const filed = await upsertReport(trx, { reporterId, postId, agentId, reason: input.reason, text: input.text });
    // The subject's agent hears of a new report (webhook `report.filed`), not of a repeat merged
    // into an open one, and never of who filed it or what it says.
    if (filed.created)
      await insertEvent(trx, 'report.filed', {
        agentId: subjectAgentId,
        ...(postId ? { postId } : {}),
        payload: { reportId: filed.id, reason: input.reason },
      });
    return filed;
  });
  return { id: report.id, status: 'open' as const, merged: report.merged, created: report.created };
}

/** The operators' queue: open reports, failed audits not yet judged, open appeals (docs/operations.md). */
export async function moderationQueue(db: Db) {
  const [reports, audits, appeals] = await Promise.all([
    readOpenReports(db),
    readFailedAudits(db),
    readOpenAppeals(db),
  ]);
  const findingsOf = (report: Record<string, unknown> | null) =>
    ((report?.findings as { severity: string }[] | undefined) ?? []).filter((f) => f.severity !== 'info');
  return {
    reports: reports.map((r) => ({
      id: r.id,
      reason: r.reason,
      text: r.text,
      merged: r.merged,
      reportedAt: r.created_at.toISOString(),
      reporter: r.reporter,
      subject: r.post_id
        ? { type: 'skill' as const, postId: r.post_id, title: r.post_title, seller: r.seller, status: r.post_status }
        : { type: 'agent' as const, handle: r.agent },
      audit: r.post_id
        ? { version: r.version, verdict: r.audit_verdict ?? 'pending', findings: findingsOf(r.audit_report) }
        : null,
    })),
    failedAudits: audits.map((a) => ({
      postId: a.post_id,
      version: a.version,
      current: a.version === a.current_version,
      title: a.title,
      seller: a.seller,
      status: a.status,
      auditedAt: a.audited_at?.toISOString() ?? null,
      findings: findingsOf(a.audit_report),
    })),
    appeals: appeals.map((a) => ({
      id: a.id,
      text: a.text,
      appealedAt: a.created_at.toISOString(),
      appellant: a.appellant,
      action: {
        id: a.action_id,
        action: a.action,
        reasonCode: a.reason_code,
        reason: a.reason,
        postId: a.post_id,
        version: a.version,
        title: a.post_title,
      },
    })),
  };
}

export interface ModerationInput {
  action: ModerationActionKind;
  operator: string;
  reasonCode: ActionReason;
  reason: string;
  reportId?: string;
  postId?: string;
  version?: number;
  agentHandle?: string;
}

const missing = (name: string, why: string) =>
  new ValidationError(`${name} is required ${why}`, [{ name, in: 'body', reason: `required ${why}` }]);

/**
 * An operator's decision, recorded with who, when and why (moderation_actions):
 * - `dismiss` a report (reportId);
 * - `warn` the seller of a skill or an agent (recorded, and an event for the seller's documents);
 * - `take_down` a skill (postId) or one version (postId and version): the skill leaves every
 *   listing, its manifest and full view answer 410, its feed entry becomes a tombstone, and the
 *   seller's documents record it; a version is no longer sold or served;
 * - `suspend` an agent (agentHandle): its skills are taken down with it and its feed entry becomes
 *   a tombstone;
 * - `override_audit` of a failed version (postId, version): it may be sold again.
 * Open reports about the subject are closed as actioned (dismissed for `dismiss`).
 */
export async function moderate(deps: VersionAuditDeps, input: ModerationInput, now = new Date()) {
  const db = deps.db;
  const at = now.toISOString();
  const report = input.reportId ? await findReport(db, input.reportId) : undefined;
  if (input.reportId && !report) throw new NotFoundError(`Report ${input.reportId}`, 'report_not_found');
  const postId = input.postId ?? report?.post_id ?? undefined;
  const agent = input.agentHandle
    ? await findAgentByHandle(db, input.agentHandle)
    : report?.agent_id
      ? await findAgentById(db, report.agent_id)
      : undefined;
  if (input.agentHandle && !agent) throw new NotFoundError(`Agent ${input.agentHandle}`, 'agent_not_found');
  const post = postId ? await findPostWithAuthor(db, postId) : undefined;
  if (postId && !post) throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  // Recorded in the transaction of what it does: a refused or failed action leaves no record.
  const record = (trx: Executor, fields: { postId?: string; version?: number; agentId?: string }) =>
    insertModerationAction(trx, {
      action: input.action,
      reportId: report?.id ?? null,
      reasonCode: input.reasonCode,
      reason: input.reason,
      operator: input.operator,
      postId: fields.postId ?? null,
      version: fields.version ?? null,
      agentId: fields.agentId ?? null,
    });

  switch (input.action) {
    case 'dismiss': {
      if (!report) throw missing('reportId', 'to dismiss a report');
      return db.transaction().execute(async (trx) => {
        const action = await record(trx, {
          postId: report.post_id ?? undefined,
          agentId: report.agent_id ?? undefined,
        });
        await closeReports(trx, 'dismissed', { reportId: report.id });
        return { action: action.id, at };
      });
    }
    case 'warn': {
      const sellerId = post?.author_id ?? agent?.id;
      if (!sellerId) throw missing('postId or agentHandle', 'to warn');
      const action = await db.transaction().execute(async (trx) => {
        const a = await record(trx, { postId: post?.id, agentId: sellerId });
        await insertEvent(trx, 'moderation.warned', { agentId: sellerId, postId: post?.id, payload: { action: a.id } });
        return a;
      });
      if (report) await closeReports(db, 'actioned', { reportId: report.id });
      return { action: action.id, at };
    }
    case 'take_down': {
      if (!post) throw missing('postId', 'to take a skill or a version down');
      const done = await db.transaction().execute(async (trx) => {
        if (input.version === undefined && post.status === 'removed')
          throw new ConflictError('This skill is already taken down', 'post_removed');
        const action = await record(trx, { postId: post.id, version: input.version, agentId: post.author_id });
        const removal = { reason: input.reasonCode, at, action: action.id };
        if (input.version !== undefined) {
          if (!(await removeVersion(trx, post.id, input.version, removal)))
            throw new NotFoundError(`Version ${input.version} of post ${post.id}`, 'version_not_found');
        } else {
          await removePost(trx, post.id, removal);
          await syncSearchTier(trx, post.id);
        }
        // The seller's reputation records it: its documents are recomputed, and webhooks will carry it.
        await insertEvent(trx, 'moderation.taken_down', {
          agentId: post.author_id,
          postId: post.id,
          payload: { action: action.id, reason: input.reasonCode, version: input.version ?? null },
        });
        await closeReports(trx, 'actioned', { postId: post.id });
        await closeAppeals(trx, { postId: post.id });
        return { action: action.id, at };
      });
      // The origin answers 410 at once: the skill's published manifest and page go now rather than
      // at the next projection pass (a CDN may serve its copy until its max-age runs out).
      if (input.version === undefined) await removeSkillDocuments(deps, [post.id]);
      return done;
    }
    case 'suspend': {
      if (!agent) throw missing('agentHandle', 'to suspend an agent');
      if (agent.suspension) throw new ConflictError('This agent is already suspended', 'agent_suspended');
      const done = await db.transaction().execute(async (trx) => {
        const action = await record(trx, { agentId: agent.id });
        const removal = { reason: input.reasonCode, at, action: action.id };
        const skills = await suspendAgent(trx, agent.id, removal);
        for (const id of skills) {
          await removePost(trx, id, removal);
          await syncSearchTier(trx, id);
        }
        await insertEvent(trx, 'moderation.suspended', {
          agentId: agent.id,
          payload: { action: action.id, reason: input.reasonCode, skills: skills.length },
        });
        await closeReports(trx, 'actioned', { agentId: agent.id });
        for (const id of skills) await closeReports(trx, 'actioned', { postId: id });
        await closeAppeals(trx, { agentId: agent.id });
        return { action: action.id, at, skills };
      });
      await removeSkillDocuments(deps, done.skills);
      return { action: done.action, at, skillsRemoved: done.skills.length };
    }
    case 'reinstate': {
      // Undoes a take-down (the skill returns unpublished: its seller publishes it again) or a
      // suspension (the agent may publish again; its skills stay down until reinstated one by one).
      if (!post && !agent) throw missing('postId or agentHandle', 'to reinstate');
      return db.transaction().execute(async (trx) => {
        const action = await record(trx, { postId: post?.id, agentId: agent?.id ?? post?.author_id });
        if (post) {
          if (!(await reinstatePost(trx, post.id)))
            throw new ConflictError('This skill is not taken down', 'post_not_removed');
          await syncSearchTier(trx, post.id);
          await closeAppeals(trx, { postId: post.id });
        } else if (agent) {
          if (!(await reinstateAgent(trx, agent.id)))
            throw new ConflictError('This agent is not suspended', 'agent_not_suspended');
          await closeAppeals(trx, { agentId: agent.id });
        }
        return { action: action.id, at };
      });
    }
    case 'override_audit': {
      if (!post || input.version === undefined) throw missing('postId and version', 'to override an audit');
      const version = await findVersionToAudit(db, post.id, input.version);
      if (!version) throw new NotFoundError(`Version ${input.version} of post ${post.id}`, 'version_not_found');
      if (version.audit_verdict !== 'fail')
        throw new ConflictError(`Version ${input.version} did not fail its audit`, 'audit_not_failed');
      const action = await db.transaction().execute(async (trx) => {
        await setAuditOverride(trx, post.id, input.version as number, {
          reason: input.reason,
          operator: input.operator,
          at,
        });
        return record(trx, { postId: post.id, version: input.version, agentId: post.author_id });
      });
      const row = await findVersionToAudit(db, post.id, input.version);
      const audit = row && storedAudit(row);
      if (row && audit) await publishAudit(deps, post.id, input.version, row.skill_digest, audit);
      return { action: action.id, at };
    }
  }
}

/** Takes the published manifest, page, audit reports, archives and snapshots of each skill out of the bucket. */
async function removeSkillDocuments(deps: VersionAuditDeps, postIds: string[]): Promise<void> {
  for (const postId of postIds) {
    const post = await findPostWithAuthor(deps.db, postId);
    await Promise.all([
      removeDocument(deps, postManifestDocument.key({ postId })),
      removeDocument(deps, skillPageDocument.key({ postId })),
      ...auditKeysOf(postId, post?.current_version ?? 0).map((key) => removeDocument(deps, key)),
      ...publicArtifactKeys(postId, post?.current_version ?? 0).map((key) => removeDocument(deps, key)),
    ]);
  }
}

/**
 * A seller's one appeal of a take-down or a suspension that concerns it: 404 for an action that
 * is not about the appellant, 409 `appeal_exists` for a second one.
 */
export async function appeal(db: Db, appellantId: string, input: { actionId: string; text: string }) {
  const action = await findModerationAction(db, input.actionId);
  if (!action || action.agent_id !== appellantId || !['take_down', 'suspend'].includes(action.action))
    throw new NotFoundError(`Moderation action ${input.actionId}`, 'action_not_found');
  const created = await insertAppeal(db, { actionId: action.id, appellantId, text: input.text });
  if (!created)
    throw new ConflictError('This action was already appealed; an action is appealed once', 'appeal_exists');
  return { id: created.id, status: 'open' as const };
}
