/** A static audit of a skill version's files; see docs/audit.md. */
export { auditSkill, MAX_FINDINGS } from './audit.js';
export { AUDIT_RULES, RULES_VERSION } from './rules.js';
export type { AuditReport, AuditRule, Finding, Severity, SkillFileInput, Verdict } from './types.js';
