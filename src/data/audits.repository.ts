import { sql } from 'kysely';
import type { Db, Executor } from './db.js';
import type { JsonRecord } from './column-types.js';
import { lockPostFirst } from './posts.repository.js';

/** What the skill-audit job needs of a version: its files and digest, and the rules it was last audited with. */
export function findVersionToAudit(db: Executor, postId: string, version: number) {
  return db
    .selectFrom('post_versions')
    .select([
      'post_id',
      'version',
      'body',
      'skill_digest',
      'audit_rules_version',
      'audit_verdict',
      'audit_report',
      'audited_at',
      'audit_override',
    ])
    .where('post_id', '=', postId)
    .where('version', '=', version)
    .executeTakeFirst();
}

export interface AuditRow {
  verdict: 'pass' | 'warn' | 'fail';
  rulesVersion: number;
  report: JsonRecord;
  auditedAt: Date;
}

/**
 * Stores a version's audit. Writing the row marks its skill changed (trigger, migration 0031), so
 * the skill's manifest, page, index entry and Bazaar listing are projected again with the verdict.
 * A report made with older rules than the stored one is not written (a late retry of an old job).
 * A stored audit records `post.audited` for the skill's seller in the same transaction, when one of
 * its webhook endpoints listens to `skill.audited`.
 */
export async function saveVersionAudit(db: Db, postId: string, version: number, a: AuditRow): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await lockPostFirst(trx, postId);
    const written = await writeVersionAudit(trx, postId, version, a);
    // The seller hears of the verdict (webhook `skill.audited`) once it is stored, when it listens:
    // a re-audit of every version under new rules records no event for sellers nobody listens for.
    if (written)
      await sql`
        INSERT INTO domain_events (type, agent_id, post_id, payload)
        SELECT 'post.audited', p.author_id, p.id,
               jsonb_build_object('version', ${version}::int, 'verdict', ${a.verdict}::text, 'rulesVersion', ${a.rulesVersion}::int)
        FROM posts p WHERE p.id = ${postId} AND EXISTS (
          SELECT 1 FROM webhook_endpoints w
          WHERE w.agent_id = p.author_id AND w.status = 'enabled' AND 'skill.audited' = ANY (w.event_types))`.execute(
        trx,
      );
    return written;
  });
}

async function writeVersionAudit(db: Executor, postId: string, version: number, a: AuditRow): Promise<boolean> {
  const r = await db
    .updateTable('post_versions')
    .set((eb) => ({
      audit_verdict: a.verdict,
      audit_rules_version: a.rulesVersion,
      audit_report: JSON.stringify(a.report),
      audited_at: a.auditedAt,
      // An override was judged against the findings of the rules then: new rules are judged anew.
      audit_override: eb
        .case()
        .when('audit_rules_version', '=', a.rulesVersion)
        .then(eb.ref('audit_override'))
        .else(null)
        .end(),
    }))
    .where('post_id', '=', postId)
    .where('version', '=', version)
    .where((eb) => eb.or([eb('audit_rules_version', 'is', null), eb('audit_rules_version', '<=', a.rulesVersion)]))
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** The versions after `after` in (post_id, version) order, a page at a time: what a re-audit walks. */
export function readVersionKeysAfter(
  db: Executor,
  after: { postId: string; version: number } | null,
  limit: number,
): Promise<{ post_id: string; version: number; audit_rules_version: number | null }[]> {
  let q = db.selectFrom('post_versions').select(['post_id', 'version', 'audit_rules_version']);
  if (after) q = q.where(sql<boolean>`(post_id, version) > (${after.postId}::uuid, ${after.version}::int)`);
  return q.orderBy('post_id').orderBy('version').limit(limit).execute();
}

/** Versions in all, for a re-audit's progress. */
export async function countVersions(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('post_versions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Records an operator's override of a failed audit: the version may be sold again. */
export async function setAuditOverride(
  trx: Executor,
  postId: string,
  version: number,
  override: { reason: string; operator: string; at: string },
): Promise<boolean> {
  await lockPostFirst(trx, postId);
  const r = await trx
    .updateTable('post_versions')
    .set({ audit_override: JSON.stringify(override) })
    .where('post_id', '=', postId)
    .where('version', '=', version)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}
