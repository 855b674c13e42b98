/**
 * Text from the network printed as it came could drive the user's terminal: ESC starts colour,
 * cursor and OSC sequences (a window title, a hyperlink, on some terminals the clipboard), CR and
 * BS write over what was printed, a newline fakes a line of the client's own, the C1 controls are
 * the 8-bit forms of the same sequences, and bidi controls make text read otherwise than its
 * characters. Every piece of remote text (titles, handles, descriptions, a problem's detail) goes
 * through this module before it is printed, with those characters shown as escapes instead.
 */

/** Invisible or terminal-driving characters beyond C0, DEL and C1: bidi controls and marks, separators. */
const FORMAT_CONTROLS = new Set([
  0x061c, // ARABIC LETTER MARK
  0x200b, // ZERO WIDTH SPACE
  0x200e, // LEFT-TO-RIGHT MARK
  0x200f, // RIGHT-TO-LEFT MARK
  0x2028, // LINE SEPARATOR
  0x2029, // PARAGRAPH SEPARATOR
  0x202a, // LEFT-TO-RIGHT EMBEDDING
  0x202b, // RIGHT-TO-LEFT EMBEDDING
  0x202c, // POP DIRECTIONAL FORMATTING
  0x202d, // LEFT-TO-RIGHT OVERRIDE
  0x202e, // RIGHT-TO-LEFT OVERRIDE
  0x2066, // LEFT-TO-RIGHT ISOLATE
  0x2067, // RIGHT-TO-LEFT ISOLATE
  0x2068, // FIRST STRONG ISOLATE
  0x2069, // POP DIRECTIONAL ISOLATE
  0xfeff, // ZERO WIDTH NO-BREAK SPACE
]);

const NAMED = new Map([
  [0x09, '\\t'],
  [0x0a, '\\n'],
  [0x0d, '\\r'],
]);

/** Whether a code point is one a terminal would act on or hide rather than show. */
export const isUnsafeCodePoint = (cp: number): boolean =>
  cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || FORMAT_CONTROLS.has(cp);

const hex = (cp: number, width: number) => cp.toString(16).padStart(width, '0');

/**
 * `text` with every control character (C0, DEL, C1) and bidi or invisible format character
 * written as an escape (`\n`, `\x1b`, `\u202e`), so that printing it shows it and does nothing
 * else. `keep` lists characters left as they are (the client's own line breaks and tabs).
 */
export function printable(text: unknown, keep = ''): string {
  let out = '';
  for (const ch of String(text)) {
    const cp = ch.codePointAt(0) ?? 0;
    if (!isUnsafeCodePoint(cp) || keep.includes(ch)) out += ch;
    else out += NAMED.get(cp) ?? (cp <= 0xff ? `\\x${hex(cp, 2)}` : `\\u${hex(cp, 4)}`);
  }
  return out;
}

/**
 * A line of output whose interpolated values are remote or may be: each is escaped by
 * `printable`, the template's own text is kept. `` shown`bought "${title}"` ``.
 */
export function shown(strings: TemplateStringsArray, ...values: unknown[]): string {
  return strings.reduce((line, s, i) => line + (i > 0 ? printable(values[i - 1]) : '') + s, '');
}

/**
 * `value` as indented JSON for the terminal. JSON.stringify escapes C0 controls but not DEL, C1
 * or the bidi controls; those are written as `\u` escapes too, which keeps the JSON the same value.
 */
export function printableJson(value: unknown): string {
  let out = '';
  for (const ch of JSON.stringify(value, null, 2)) {
    const cp = ch.codePointAt(0) ?? 0;
    out += cp >= 0x7f && isUnsafeCodePoint(cp) ? `\\u${hex(cp, 4)}` : ch;
  }
  return out;
}
