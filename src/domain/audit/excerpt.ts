/**
 * Excerpts quote attacker-controlled text back to a reader, so every character that renders as
 * nothing, moves the text around (bidi controls) or hides data (Unicode tag characters) is spelled
 * out as `\uXXXX`: the excerpt itself can never carry hidden text.
 */

export const EXCERPT_MAX = 160;

/** Format, control, separator and private/unassigned-looking characters a reader cannot see. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0\ufffc]/u;

function escapeChar(ch: string): string {
  const code = ch.codePointAt(0) ?? 0;
  if (ch === '\t') return ' ';
  const hex = code.toString(16);
  return code > 0xffff ? `\\u{${hex}}` : `\\u${hex.padStart(4, '0')}`;
}

/** Spells out invisible characters; leaves the rest as it is. */
export function makeVisible(text: string): string {
  let out = '';
  for (const ch of text) out += INVISIBLE.test(ch) ? escapeChar(ch) : ch;
  return out;
}

/**
 * The excerpt of a line: a window around `column` (0-based) when the line is long, so a finding in
 * the middle of a minified line still shows its cause, trimmed and made visible, at most 160 chars.
 */
export function excerptOf(line: string, column = 0): string {
  // Only a bounded window is escaped: a megabyte-long line must not cost a megabyte of work.
  const start = line.length > EXCERPT_MAX && column > 40 ? column - 40 : 0;
  const window = line.slice(start, start + EXCERPT_MAX * 2);
  let visible = makeVisible(window.trim());
  if (start > 0) visible = `…${visible}`;
  if (visible.length > EXCERPT_MAX) visible = `${visible.slice(0, EXCERPT_MAX - 1)}…`;
  return visible;
}

/** Offsets of the start of each line, for offset-to-line look-ups in one pass. */
export class LineIndex {
  private readonly starts: number[] = [0];
  constructor(private readonly text: string) {
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.starts.push(i + 1);
  }

  get count(): number {
    return this.starts.length;
  }

  /** 1-based line of a character offset. */
  lineOf(offset: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.starts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  /** 0-based column of a character offset. */
  columnOf(offset: number): number {
    return offset - (this.starts[this.lineOf(offset) - 1] ?? 0);
  }

  /** Offset of the first character of a 1-based line. */
  lineStart(line: number): number {
    return this.starts[line - 1] ?? this.text.length;
  }

  /** The text of a 1-based line, without its line break. */
  lineText(line: number): string {
    const start = this.starts[line - 1];
    if (start === undefined) return '';
    const next = this.starts[line];
    const end = next === undefined ? this.text.length : next - 1;
    return this.text.slice(start, end).replace(/\r$/, '');
  }
}
