import { makeVisible } from './excerpt.js';
import { classifyHost, findUrls } from './hosts.js';
import type { FileReport } from './report.js';

/**
 * Checks that read a file as text, whatever its language: binary content, minified code, encoded
 * blobs, invisible characters and the URLs it names. They run on every file, parsed or not.
 */

/** Control characters other than tab, line feed, carriage return and form feed. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is counted
const CONTROL = /[\u0000-\u0008\u000b\u000e-\u001f\u007f]/g;

export function checkBinary(report: FileReport): boolean {
  const text = report.text;
  const nul = text.indexOf('\u0000');
  const controls = text.match(CONTROL)?.length ?? 0;
  const replacements = text.match(/\uFFFD/g)?.length ?? 0;
  const share = Math.max(1, text.length);
  if (nul >= 0 || controls / share > 0.01 || replacements > Math.max(3, share * 0.01)) {
    const why = nul >= 0 ? 'a NUL character' : controls > 0 ? `${controls} control characters` : '';
    const also = replacements > 0 ? `${why ? ', ' : ''}${replacements} replacement characters` : '';
    report.addAt('file.binary', Math.max(0, nul), `the file looks binary (${why}${also})`);
    return true;
  }
  return false;
}

/** Lines this long, or files this dense, are not written for people to read. */
const MINIFIED_LINE = 1000;
const MINIFIED_AVERAGE = 200;

export function checkMinified(report: FileReport): void {
  const { lines, text } = report;
  let longest = 0;
  let longestLine = 0;
  for (let i = 1; i <= lines.count; i++) {
    const length = lines.lineText(i).length;
    if (length > longest) [longest, longestLine] = [length, i];
  }
  const average = text.length / lines.count;
  if (longest > MINIFIED_LINE || (text.length > 2000 && average > MINIFIED_AVERAGE))
    report.add(
      'file.minified',
      longestLine,
      `minified or generated code: longest line ${longest} characters, ${Math.round(average)} on average`,
    );
}

const BLOB = /[A-Za-z0-9+/_-]{200,}={0,2}/g;

/** Leading bytes of media formats: an encoded image or font is data, not hidden code. */
const MEDIA_MAGIC: readonly number[][] = [
  [0x89, 0x50, 0x4e, 0x47], // PNG
  [0xff, 0xd8, 0xff], // JPEG
  [0x47, 0x49, 0x46, 0x38], // GIF
  [0x52, 0x49, 0x46, 0x46], // RIFF (WebP, WAV)
  [0x77, 0x4f, 0x46, 0x46], // WOFF
  [0x77, 0x4f, 0x46, 0x32], // WOFF2
  [0x25, 0x50, 0x44, 0x46], // PDF
  [0x00, 0x00, 0x01, 0x00], // ICO
];

function isMedia(blob: string, before: string): boolean {
  if (/data:(image|font|audio|video)\/[\w.+-]+;base64,$/.test(before)) return true;
  const head = Buffer.from(blob.slice(0, 16), 'base64');
  return MEDIA_MAGIC.some((magic) => magic.every((byte, i) => head[i] === byte));
}

export function checkBlobs(report: FileReport): void {
  for (const m of report.text.matchAll(BLOB)) {
    const blob = m[0];
    const index = m.index ?? 0;
    if (isMedia(blob, report.text.slice(Math.max(0, index - 40), index))) continue;
    const kind = /^[0-9a-fA-F]+$/.test(blob) ? 'hex' : 'base64';
    report.addAt('obfuscation.encoded-blob', index, `a ${blob.length}-character ${kind} blob hides its content`);
  }
}

/** Zero-width characters, bidi controls and Unicode tag characters (which can spell hidden ASCII). */
const INVISIBLE = /[\u200b-\u200d\u2060-\u2064\u180e\u202a-\u202e\u2066-\u2069\ufeff]|[\u{e0000}-\u{e007f}]/gu;

/** Tag characters mirror ASCII: the text they spell, which a reader never sees. */
export function decodeTagCharacters(text: string): string {
  // Every tag character is encoded with the high surrogate U+DB40: without one there is nothing to do.
  if (!text.includes('\udb40')) return '';
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    if (code >= 0xe0020 && code <= 0xe007e) out += String.fromCharCode(code - 0xe0000);
  }
  return out;
}

export function checkInvisible(report: FileReport): void {
  const perLine = new Map<number, { offset: number; count: number }>();
  for (const m of report.text.matchAll(INVISIBLE)) {
    const index = m.index ?? 0;
    if (index === 0 && m[0] === '\ufeff') continue; // a byte-order mark at the start is harmless
    const line = report.lines.lineOf(index);
    const entry = perLine.get(line);
    if (entry) entry.count++;
    else perLine.set(line, { offset: index, count: 1 });
  }
  for (const [line, { offset, count }] of perLine) {
    const hidden = decodeTagCharacters(report.lines.lineText(line));
    const spelled = hidden ? `; tag characters spell "${makeVisible(hidden.slice(0, 80))}"` : '';
    report.addAt('injection.invisible-chars', offset, `${count} invisible or bidi control character(s)${spelled}`);
  }
}

/** Hosts named by URLs anywhere in the file, once per host, suspicious ones as warnings. */
export function checkUrls(report: FileReport, known: Set<string>): void {
  for (const url of findUrls(report.text)) {
    const key = url.host + (url.path.startsWith('/api/webhooks') ? '/api/webhooks' : '');
    if (known.has(key)) continue;
    known.add(key);
    reportHost(
      report,
      url.host,
      report.lines.lineOf(url.index),
      `links to`,
      url.path,
      report.lines.columnOf(url.index),
    );
  }
}

export function reportHost(report: FileReport, host: string, line: number, verb: string, path = '', column = 0): void {
  const cls = classifyHost(host, path);
  if (cls.kind === 'suspicious') report.add('network.suspicious-host', line, `${verb} ${host}, ${cls.why}`, column);
  else
    report.add(
      'network.host',
      line,
      `${verb} ${host}${cls.kind === 'docs' ? ' (well-known documentation or local host)' : ''}`,
      column,
    );
}
