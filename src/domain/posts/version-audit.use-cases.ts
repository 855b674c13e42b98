import {
  countVersions,
  findVersionToAudit,
  readVersionKeysAfter,
  saveVersionAudit,
} from '../../data/audits.repository.js';
import type { Db } from '../../data/db.js';
import { findPostWithAuthor } from '../../data/posts.repository.js';
import { skillAuditDocument, storedAudit, type StoredAudit } from '../../documents/posts/skill-audit.document.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { auditSkill, RULES_VERSION } from '../audit/index.js';
import { jsonBytes, publishDocuments, type PublishCounter } from '../publishing/publish-document.js';

export interface VersionAuditDeps {
  db: Db;
  store: ObjectStore;
  baseUrl: string;
  documentsPublished?: PublishCounter;
}

/** The job id of a version's audit under the current rules: one audit per version and rules version. */
export const auditJobId = (postId: string, version: number) => `skill-audit-${postId}-${version}-r${RULES_VERSION}`;

/** The bucket keys of the audit.json of versions 1..`versions` of a skill. */
export const auditKeysOf = (postId: string, versions: number): string[] =>
  Array.from({ length: versions }, (_, i) => skillAuditDocument.key({ postId, version: String(i + 1) }));

/**
 * What the audit says when it could not finish (a bug of the audit, or input it could not bear):
 * `fail`, never a silent pass, with the reason, so an operator looks at the version and overrides
 * the verdict or takes it down.
 */
function auditThatFailed(err: unknown) {
  return {
    rulesVersion: RULES_VERSION,
    verdict: 'fail' as const,
    counts: { fail: 1, warn: 0, info: 0 },
    findings: [],
    unreadable: [
      {
        file: '(all)',
        reason: `the audit could not complete: ${(err as Error)?.message ?? String(err)}`.slice(0, 300),
      },
    ],
    truncated: false,
  };
}

/**
 * Audits one version (never running any of its files), stores the verdict with it and, when the
 * skill is published, publishes its audit.json. Storing marks the skill changed, so its manifest,
 * page, index entry and Bazaar listing show the verdict within a projection pass (which also
 * publishes the audit.json of a skill published later). A version already audited under the
 * current rules is left as it is; an audit that throws is stored as `fail`.
 */
export async function auditVersion(deps: VersionAuditDeps, postId: string, version: number) {
  const row = await findVersionToAudit(deps.db, postId, version);
  if (!row) return { skipped: 'version not found' };
  if (row.audit_rules_version === RULES_VERSION && row.audit_verdict)
    return { skipped: 'audited', verdict: row.audit_verdict };
  const started = performance.now();
  const report = await auditSkill(row.body.files).catch(auditThatFailed);
  await saveVersionAudit(deps.db, postId, version, {
    verdict: report.verdict,
    rulesVersion: report.rulesVersion,
    report: report as unknown as Record<string, unknown>,
    auditedAt: new Date(),
  });
  // What is stored now (a concurrent audit may have stored another, an override may stand).
  const stored = await findVersionToAudit(deps.db, postId, version);
  const audit = stored && storedAudit(stored);
  const post = await findPostWithAuthor(deps.db, postId);
  if (audit && post?.status === 'published') await publishAudit(deps, postId, version, row.skill_digest, audit);
  return { verdict: report.verdict, counts: report.counts, ms: Math.round(performance.now() - started) };
}

/** Publishes a version's audit.json (again after an override). */
export async function publishAudit(
  deps: VersionAuditDeps,
  postId: string,
  version: number,
  skillDigest: string,
  audit: StoredAudit,
): Promise<void> {
  await publishDocuments(deps, [
    {
      document: skillAuditDocument,
      key: skillAuditDocument.key({ postId, version: String(version) }),
      body: jsonBytes(skillAuditDocument.render({ postId, version, skillDigest, audit, baseUrl: deps.baseUrl })),
    },
  ]);
}

/** Versions read per step of a re-audit. */
const REAUDIT_PAGE = 500;

/**
 * Queues the audit of every version not audited under the current rules, walking the versions in
 * primary-key order a page at a time, and reports progress after each page: what a rule change
 * needs (`npm run ops -- reaudit`). Returns the versions seen and queued.
 */
export async function queueReaudit(deps: {
  db: Db;
  queueAudits(keys: { postId: string; version: number }[]): Promise<void>;
  progress?(p: { scanned: number; total: number; queued: number }): Promise<void>;
}): Promise<{ scanned: number; queued: number; rulesVersion: number }> {
  const total = await countVersions(deps.db);
  let after: { postId: string; version: number } | null = null;
  let scanned = 0;
  let queued = 0;
  for (;;) {
    const page = await readVersionKeysAfter(deps.db, after, REAUDIT_PAGE);
    if (!page.length) break;
    const due = page.filter((v) => v.audit_rules_version !== RULES_VERSION);
    if (due.length) await deps.queueAudits(due.map((v) => ({ postId: v.post_id, version: v.version })));
    scanned += page.length;
    queued += due.length;
    await deps.progress?.({ scanned, total, queued });
    const last = page[page.length - 1];
    if (!last || page.length < REAUDIT_PAGE) break;
    after = { postId: last.post_id, version: last.version };
  }
  return { scanned, queued, rulesVersion: RULES_VERSION };
}
