/** What the audit says about one skill version; see docs/audit.md. */

export type Severity = 'info' | 'warn' | 'fail';
export type Verdict = 'pass' | 'warn' | 'fail';

export interface AuditRule {
  id: string;
  severity: Severity;
  title: string;
  rationale: string;
}

export interface Finding {
  rule: string;
  severity: Severity;
  file: string;
  /** 1-based line of the file; 0 when the finding concerns the whole file. */
  line: number;
  /** The offending line, trimmed to 160 characters, with invisible characters spelled out. */
  excerpt: string;
  message: string;
}

export interface AuditReport {
  rulesVersion: number;
  verdict: Verdict;
  counts: { fail: number; warn: number; info: number };
  findings: Finding[];
  unreadable: { file: string; reason: string }[];
  truncated: boolean;
}

export interface SkillFileInput {
  path: string;
  content: string;
}
