import type { FileReport } from './report.js';
import { decodeTagCharacters } from './text.js';

/**
 * Prompt-injection markers in instructions (SKILL.md, references and other markdown or text
 * files), and the fenced code blocks those instructions ask the agent to run.
 */

export interface CodeBlock {
  /** The info string's first word, lower case ("bash", "python"…). */
  language: string;
  text: string;
  /** 1-based line of the block's first content line. */
  firstLine: number;
}

interface Layout {
  blocks: CodeBlock[];
  /** 1-based lines inside fences (fence lines included). */
  fenced: Set<number>;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;

function layoutOf(report: FileReport): Layout {
  const blocks: CodeBlock[] = [];
  const fenced = new Set<number>();
  let open: { marker: string; language: string; start: number; lines: string[] } | undefined;
  for (let n = 1; n <= report.lines.count; n++) {
    const line = report.lines.lineText(n);
    const fence = FENCE.exec(line);
    if (open) {
      fenced.add(n);
      if (fence && (fence[1] ?? '').startsWith(open.marker) && !(fence[2] ?? '')) {
        blocks.push({ language: open.language, text: open.lines.join('\n'), firstLine: open.start + 1 });
        open = undefined;
      } else open.lines.push(line);
    } else if (fence) {
      fenced.add(n);
      open = { marker: fence[1] ?? '```', language: (fence[2] ?? '').toLowerCase(), start: n, lines: [] };
    }
  }
  if (open) blocks.push({ language: open.language, text: open.lines.join('\n'), firstLine: open.start + 1 });
  return { blocks, fenced };
}

export function codeBlocks(report: FileReport): CodeBlock[] {
  return layoutOf(report).blocks;
}

// Gaps between key words are bounded ({0,80}) so every pattern stays linear on long lines.
const OVERRIDE: readonly RegExp[] = [
  /\b(ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|every|of|these)\s+){0,3}(previous|prior|above|earlier|preceding|original|system|developer|safety|other|existing)\s+(instructions?|prompts?|rules|guidelines|directives|messages|guardrails|context|polic(?:y|ies))/i,
  /\b(ignore|disregard|forget)\s+(everything|all)\s+(you\s+(were|have\s+been)\s+told|above|before)/i,
  /\byou\s+are\s+now\s+(in\s+)?(developer|god|jailbreak|dan|unrestricted|unfiltered)\b/i,
  /\bnew\s+system\s+(prompt|instructions)\b/i,
  /<\|?\s*(im_start|system)\s*\|?>/i,
  /\b(these|the\s+following|my)\s+instructions\s+(take\s+precedence|override|supersede)/i,
];

const REVIEWER: readonly RegExp[] = [
  /\b(if|when)\s+you\s+are\s+(an?\s+)?(ai|llm|language\s+model|assistant|automated|bot|model|gpt|claude)\b[^.!?]{0,80}\b(review|audit|scan|analy[sz]|evaluat|assess|inspect|moderat)/i,
  /\b(mark|classify|rate|report|label|flag|treat|consider|deem)\s+(this|the)\s+(skill|file|code|package|repository|script|content|submission)\s+(as\s+)?(safe|benign|harmless|clean|trusted|secure|legitimate|approved)\b/i,
  /\bnote\s+(to|for)\s+(the\s+|any\s+)?(ai\s+|automated\s+)?(reviewers?|auditors?|scanners?|moderators?|security\s+(scanners?|tools?|reviewers?))\b/i,
  /\b(ai\s+)?(reviewers?|auditors?|scanners?)\s*[,:]\s*(please\s+)?(ignore|skip|do\s+not\s+flag|don't\s+flag|approve)/i,
];

const CONCEAL =
  /\b(do\s+not|don't|never|without)\s+(tell(ing)?|inform(ing)?|mention(ing)?|reveal(ing)?|notify(ing)?|alert(ing)?|let(ting)?)\s+(the\s+|your\s+)?(users?|human|operator|owner)\b(?!['’]s)/i;

const TOOL_DIRECTIVE =
  /^\s*(prettier|markdownlint|eslint|toc|vale|cspell|textlint|lint|todo|fixme|xxx|hack|end|begin|start)\b/i;
const IMPERATIVE =
  /(^|[.!?:;]\s+)(ignore|disregard|forget|run|execute|send|upload|download|install|delete|remove|read|copy|always|never|do\s+not|don't|you\s+(must|should|will|need|are)|before|after|instead|from\s+now\s+on)\b/i;

/** Is an offset an example: in a fenced block, a block quote, or an inline code span? */
function isQuoted(report: FileReport, layout: Layout, offset: number): boolean {
  const line = report.lines.lineOf(offset);
  if (layout.fenced.has(line)) return true;
  const text = report.lines.lineText(line);
  if (/^\s*>/.test(text)) return true;
  const column = report.lines.columnOf(offset);
  const ticksBefore = text.slice(0, column).split('`').length - 1;
  return ticksBefore % 2 === 1;
}

function scanPhrases(report: FileReport, layout: Layout, text: string, at?: number): void {
  const place = (index: number) => at ?? index;
  const quoted = (index: number) => at === undefined && isQuoted(report, layout, index);
  const check = (patterns: readonly RegExp[], rule: string, message: string) => {
    for (const pattern of patterns) {
      const m = pattern.exec(text);
      if (!m) continue;
      const index = m.index;
      if (quoted(index)) report.addAt('injection.quoted', place(index), `quoted example: ${message}`);
      else report.addAt(rule, place(index), message);
    }
  };
  check(OVERRIDE, 'injection.override', 'tells the model to ignore or override its other instructions');
  check(REVIEWER, 'injection.reviewer-directed', 'addresses a reviewing or auditing model');
  check([CONCEAL], 'injection.conceal', 'asks the agent to keep something from its user');
}

/** Longer lines are scanned in overlapping windows, so text far into a huge line is still seen. */
const WINDOW = 20_000;
const OVERLAP = 200;

/** Every line is checked (with the start of the next, for sentences wrapped in the source). */
function scanLines(report: FileReport, layout: Layout): void {
  for (let n = 1; n <= report.lines.count; n++) {
    const text = report.lines.lineText(n);
    if (text.trim().length < 8) continue;
    const joined = text.length < WINDOW ? `${text} ${report.lines.lineText(n + 1).slice(0, OVERLAP)}` : text;
    const start = report.lines.lineStart(n);
    for (let from = 0; from < text.length; from += WINDOW - OVERLAP)
      scanLine(report, layout, joined.slice(from, from + WINDOW), start + from, text.length - from);
  }
}

function scanLine(report: FileReport, layout: Layout, text: string, start: number, ownLength: number): void {
  const hits = (patterns: readonly RegExp[]) =>
    patterns.map((p) => p.exec(text)).filter((m): m is RegExpExecArray => m !== null && m.index < ownLength);
  const emit = (matches: RegExpExecArray[], rule: string, message: string) => {
    for (const m of matches) {
      const offset = start + m.index;
      if (isQuoted(report, layout, offset)) report.addAt('injection.quoted', offset, `quoted example: ${message}`);
      else report.addAt(rule, offset, message);
    }
  };
  emit(hits(OVERRIDE), 'injection.override', 'tells the model to ignore or override its other instructions');
  emit(hits(REVIEWER), 'injection.reviewer-directed', 'addresses a reviewing or auditing model');
  emit(hits([CONCEAL]), 'injection.conceal', 'asks the agent to keep something from its user');
}

/** HTML comments are hidden when rendered: imperative text in one is aimed at the model alone. */
function scanComments(report: FileReport, layout: Layout): void {
  const text = report.text;
  for (let open = text.indexOf('<!--'); open >= 0; ) {
    const close = text.indexOf('-->', open + 4);
    const body = text.slice(open + 4, close < 0 ? text.length : close);
    const words = body.trim().split(/\s+/).length;
    if (!isQuoted(report, layout, open) && !TOOL_DIRECTIVE.test(body) && words >= 4 && IMPERATIVE.test(body.trim()))
      report.addAt('injection.hidden-comment', open, 'an HTML comment, invisible when rendered, gives instructions');
    if (close < 0) break;
    open = text.indexOf('<!--', close + 3);
  }
}

/** Text spelled in Unicode tag characters is read by models but shown to nobody. */
function scanTagText(report: FileReport, layout: Layout): void {
  const hidden = decodeTagCharacters(report.text);
  if (!hidden) return;
  const first = report.text.search(/[\u{e0000}-\u{e007f}]/u);
  scanPhrases(report, layout, hidden, Math.max(0, first));
}

export function checkInstructions(report: FileReport): CodeBlock[] {
  const layout = layoutOf(report);
  scanLines(report, layout);
  scanComments(report, layout);
  scanTagText(report, layout);
  return layout.blocks;
}
