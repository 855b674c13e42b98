import { readFrontmatter } from '@skill-market/skill-protocol/skill-frontmatter';
import type { FileReport } from './report.js';

/**
 * The allowed-tools field of SKILL.md: tools the agent may use without asking. Listed for the
 * reader; grants that pre-approve any command, or a shell that reaches the network or runs code,
 * are warned about.
 */

/** Commands that, pre-approved in a Bash(...) grant, reach the network or run arbitrary code. */
const RISKY_COMMANDS = new Set([
  'curl',
  'wget',
  'nc',
  'ncat',
  'netcat',
  'ssh',
  'scp',
  'rsync',
  'sh',
  'bash',
  'zsh',
  'eval',
  'exec',
  'sudo',
  'python',
  'python3',
  'node',
  'perl',
  'ruby',
  'env',
  'xargs',
]);

/** Splits "Bash(git status:*) Read, Write" at spaces and commas outside parentheses. */
export function splitTools(value: string): string[] {
  const tools: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of value) {
    if (ch === '(') depth++;
    if (ch === ')') depth = Math.max(0, depth - 1);
    if (depth === 0 && (ch === ',' || /\s/.test(ch))) {
      if (current) tools.push(current);
      current = '';
    } else current += ch;
  }
  if (current) tools.push(current);
  return tools;
}

/** Why a grant is broad, or undefined when it is narrow. */
export function broadGrant(tool: string): string | undefined {
  if (tool === '*') return 'every tool';
  const bash = /^Bash(?:\((.*)\))?$/i.exec(tool);
  if (!bash) return undefined;
  const pattern = (bash[1] ?? '').trim();
  if (pattern === '' || /^[*:\s]*$/.test(pattern)) return 'any shell command';
  const command = pattern.split(/[\s:]/)[0] ?? '';
  if (RISKY_COMMANDS.has(command)) return `${command}, which reaches the network or runs any code`;
  return undefined;
}

export function checkAllowedTools(report: FileReport): void {
  const raw = readFrontmatter(report.text)?.fields['allowed-tools'];
  if (raw === undefined || raw === null) return;
  const value = Array.isArray(raw) ? raw.join(' ') : String(raw);
  const tools = splitTools(value);
  let line = 1;
  for (let n = 1; n <= report.lines.count; n++)
    if (/^allowed-tools\s*:/.test(report.lines.lineText(n))) {
      line = n;
      break;
    }
  report.add('tools.allowed', line, `pre-approves ${tools.length} tool(s): ${tools.join(', ')}`.slice(0, 500));
  for (const tool of tools) {
    const why = broadGrant(tool);
    if (why) report.add('tools.broad-grant', line, `${tool} pre-approves ${why}`);
  }
}
