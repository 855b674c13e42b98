import { type AuditReport, auditSkill, type Finding } from '../../../src/domain/audit/index.js';

export const SKILL_MD = '---\nname: demo\ndescription: A demo skill.\n---\n\n# Demo\n';

/** Audits a skill made of SKILL.md (the default one unless given) and the files named. */
export function auditFiles(files: Record<string, string>): Promise<AuditReport> {
  const all = { 'SKILL.md': SKILL_MD, ...files };
  return auditSkill(Object.entries(all).map(([path, content]) => ({ path, content })));
}

export function rulesOf(report: AuditReport, file?: string): string[] {
  return report.findings.filter((f) => !file || f.file === file).map((f) => f.rule);
}

export function findingsOf(report: AuditReport, rule: string): Finding[] {
  return report.findings.filter((f) => f.rule === rule);
}
