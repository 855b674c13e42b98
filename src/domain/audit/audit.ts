import { sortedByKey } from '../../platform/text.js';
import { readCode, treeSitterParsers } from './code.js';
import { type CodeFacts, classifyWrite, emptyFacts, mergeFacts } from './facts.js';
import { classifyHost } from './hosts.js';
import { blockLanguage, isDocument, isMarkdown, scriptKind, shebangInterpreter } from './languages.js';
import { checkInstructions } from './markdown.js';
import { FileReport } from './report.js';
import { RULES_VERSION } from './rules.js';
import { checkAllowedTools } from './tools.js';
import { checkBinary, checkBlobs, checkInvisible, checkMinified, checkUrls, reportHost } from './text.js';
import type { AuditReport, Finding, SkillFileInput, Verdict } from './types.js';

/** A report lists at most this many findings (the counts cover all of them). */
export const MAX_FINDINGS = 200;

type Parsers = Awaited<ReturnType<typeof treeSitterParsers>>;

interface SkillContext {
  parsers: Parsers;
  /** SKILL.md in lower case: a host it names is the skill's documented service. */
  skillMd: string;
  findings: Finding[];
  unreadable: { file: string; reason: string }[];
}

/**
 * Audits a skill version statically: reads every file as text and parses its scripts, never runs
 * anything and does no I/O beyond loading the parsers once per process. Deterministic: the same
 * files give the same report.
 */
export async function auditSkill(files: readonly SkillFileInput[]): Promise<AuditReport> {
  const parsers = await treeSitterParsers();
  const skillMd = files.find((f) => f.path === 'SKILL.md')?.content ?? '';
  const context: SkillContext = { parsers, skillMd: skillMd.toLowerCase(), findings: [], unreadable: [] };
  const ordered = sortedByKey(files, (f) => f.path);
  for (const file of ordered) auditFile(file, context);
  return summarise(context);
}

function auditFile(file: SkillFileInput, context: SkillContext): void {
  const report = new FileReport(file.path, file.content, context.findings);
  const unreadable = (reason: string) => context.unreadable.push({ file: file.path, reason });
  const binary = checkBinary(report);
  if (binary) unreadable('binary content: not reviewable as text');
  if (file.path === 'SKILL.md') checkAllowedTools(report);

  const kind = binary ? undefined : scriptKind(file.path, file.content);
  const facts = emptyFacts();
  if (kind) {
    report.add('script.interpreter', 1, `${file.path} is a ${kind.language} script run by ${kind.interpreter}`);
    checkMinified(report);
    const reading = readCode(context.parsers, kind.language, file.content);
    mergeFacts(facts, reading.facts);
    if (reading.problem) {
      unreadable(reading.problem);
      fallbackChecks(report);
    }
  } else if (!binary) {
    const shebang = shebangInterpreter(file.content.slice(0, 200).split('\n', 1)[0] ?? '');
    if (shebang) report.add('file.shebang-non-script', 1, `a document starts with "#!" naming ${shebang}`);
    const blocks = checkInstructions(report);
    if (isMarkdown(file.path) || !isDocument(file.path)) mergeFacts(facts, codeBlockFacts(blocks, context));
  }
  judgeFacts(report, facts, context);
  checkBlobs(report);
  checkInvisible(report);
  checkUrls(report, new Set(facts.network.map((n) => n.host ?? '')));
}

/** Code blocks of instructions are what the agent is told to run: their facts count like a script's. */
function codeBlockFacts(blocks: ReturnType<typeof checkInstructions>, context: SkillContext): CodeFacts {
  const facts = emptyFacts();
  for (const block of blocks) {
    const language = blockLanguage(block.language);
    if (!language) continue;
    // Console transcripts prefix commands with a prompt; the commands are what runs.
    const text = block.language === 'console' ? block.text.replace(/^\s*[$#] /gm, '') : block.text;
    // Snippets in prose are often partial, so a syntax error here does not make the file unreadable.
    const reading = readCode(context.parsers, language, text);
    for (const key of Object.keys(reading.facts) as (keyof CodeFacts)[])
      for (const fact of reading.facts[key]) fact.line += block.firstLine - 1;
    mergeFacts(facts, reading.facts);
  }
  return facts;
}

/** Without a syntax tree, the one attack simple enough to see line by line is still looked for. */
function fallbackChecks(report: FileReport): void {
  const pipe = /\b(curl|wget)\b[^|\n]{0,500}\|\s*(sudo\s+)?(ba|z|da|k)?sh\b/g;
  for (const m of report.text.matchAll(pipe))
    report.addAt('script.pipe-to-shell', m.index ?? 0, `${m[1]} output is piped into a shell (seen without parsing)`);
}

function judgeFacts(report: FileReport, facts: CodeFacts, context: SkillContext): void {
  for (const f of facts.pipeToShell) report.add('script.pipe-to-shell', f.line, f.detail, f.column);
  for (const f of facts.evalFetched) report.add('script.eval-fetched', f.line, f.detail, f.column);
  for (const f of facts.execDecoded) report.add('obfuscation.exec-decoded', f.line, f.detail, f.column);
  for (const f of facts.charCodes) report.add('obfuscation.char-codes', f.line, f.detail, f.column);
  for (const f of facts.persistence) report.add('persistence.startup-file', f.line, f.detail, f.column);
  for (const w of facts.writes) {
    const target = classifyWrite(w.path);
    if (target === 'persistence')
      report.add('persistence.startup-file', w.line, `${w.via} writes ${w.path}, which runs again later`, w.column);
    else if (target === 'outside')
      report.add('filesystem.write-outside', w.line, `${w.via} writes ${w.path}, outside the skill folder`, w.column);
  }
  for (const n of facts.network) if (n.host) reportHost(report, n.host, n.line, `${n.via} contacts`, '', n.column);
  judgeSecrets(report, facts, context);
}

/**
 * A secret read and a network send in the same script. Credential files and the whole environment
 * fail outright; a named secret variable is an API key in use when every send goes to a host
 * SKILL.md names (and that host is not suspicious), and fails otherwise.
 */
function judgeSecrets(report: FileReport, facts: CodeFacts, context: SkillContext): void {
  const sends = facts.network;
  const hosts = [...new Set(sends.map((s) => s.host ?? 'a computed address'))].join(', ');
  const documented = (host: string | undefined) =>
    host !== undefined && classifyHost(host).kind !== 'suspicious' && context.skillMd.includes(host);
  for (const read of facts.secretReads) {
    if (sends.length === 0) {
      if (read.kind === 'credential-file')
        report.add('secrets.credential-file', read.line, `reads ${read.what}, a credential`, read.column);
      continue;
    }
    const what = read.kind === 'env-dump' ? `the whole environment (${read.what})` : read.what;
    // A project's .env file holds the same kind of keys as its environment variables.
    const namedKeys = read.kind === 'env-var' || /(^|\/)\.env(\.[\w-]+)?$/.test(read.what);
    if (!namedKeys || !sends.every((s) => documented(s.host)))
      report.add('secrets.exfiltration', read.line, `reads ${what} and the same script sends to ${hosts}`, read.column);
    else
      report.add('secrets.api-key', read.line, `${read.what} is sent to ${hosts}, which SKILL.md names`, read.column);
  }
}

/** The first MAX_FINDINGS by severity, so a long list of info never hides a failure. */
function keepMostSevere(findings: Finding[]): Finding[] {
  if (findings.length <= MAX_FINDINGS) return [...findings];
  const bySeverity = [...findings].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] || compareFindings(a, b),
  );
  return bySeverity.slice(0, MAX_FINDINGS);
}

const SEVERITY_ORDER = { fail: 0, warn: 1, info: 2 } as const;

function compareFindings(a: Finding, b: Finding): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  if (a.line !== b.line) return a.line - b.line;
  if (a.rule !== b.rule) return a.rule < b.rule ? -1 : 1;
  if (a.severity !== b.severity) return SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity];
  return a.message < b.message ? -1 : a.message > b.message ? 1 : 0;
}

function summarise(context: SkillContext): AuditReport {
  const all = context.findings;
  const counts = { fail: 0, warn: 0, info: 0 };
  for (const f of all) counts[f.severity]++;
  const verdict: Verdict =
    counts.fail > 0 ? 'fail' : counts.warn > 0 || context.unreadable.length > 0 ? 'warn' : 'pass';
  return {
    rulesVersion: RULES_VERSION,
    verdict,
    counts,
    findings: keepMostSevere(all).sort(compareFindings),
    unreadable: context.unreadable,
    truncated: all.length > MAX_FINDINGS,
  };
}
