import { excerptOf, LineIndex } from './excerpt.js';
import { ruleById } from './rules.js';
import type { Finding } from './types.js';

/** Collects the findings of one file, quoting the offending line of each. */
export class FileReport {
  readonly lines: LineIndex;
  private readonly seen = new Set<string>();

  constructor(
    readonly path: string,
    readonly text: string,
    private readonly sink: Finding[],
  ) {
    this.lines = new LineIndex(text);
  }

  /** Adds a finding at a 1-based line; the same rule and message twice on one line count once. */
  add(ruleId: string, line: number, message: string, column = 0): void {
    const key = `${ruleId}\u0000${line}\u0000${message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    const rule = ruleById(ruleId);
    const excerpt = line > 0 ? excerptOf(this.lines.lineText(line), column) : '';
    this.sink.push({ rule: rule.id, severity: rule.severity, file: this.path, line, excerpt, message });
  }

  /** Adds a finding at a character offset of the file. */
  addAt(ruleId: string, offset: number, message: string): void {
    this.add(ruleId, this.lines.lineOf(offset), message, this.lines.columnOf(offset));
  }
}
