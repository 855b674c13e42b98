import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/**
 * The archive of one skill version (the Agent Skills discovery draft's `type: "archive"`
 * artifact): a gzip-compressed POSIX ustar tar of the skill folder, `SKILL.md` and the other
 * files at its root, no wrapper directory. The same files always give the same bytes, so its
 * SHA-256 is a stable digest of the version:
 *
 * - entries sorted by the bytes of their UTF-8 paths, regular files only (no directory, link or
 *   device entries: an extractor makes the parent folders);
 * - every header field fixed: mode 0644, uid and gid 0, empty user and group names, mtime 0;
 * - a path longer than the 100 bytes of ustar's name field is split at a `/` into prefix and
 *   name, or, when no split fits, carried by a PAX `path` record (itself with fixed fields);
 * - the tar padded to a whole 10,240-byte record, as tar(1) writes it;
 * - gzip at level 9 with the header's time 0, no file name, XFL 2 and OS 255 (unknown), so the
 *   header does not depend on when or where it was built.
 *
 * The deflate stream is Node's zlib's: archives are published once per version and never
 * rebuilt, so a later zlib that compressed differently would not change a published artifact.
 */

export const SKILL_ARCHIVE_TYPE = 'application/gzip';

export interface ArchiveFile {
  path: string;
  content: string | Buffer;
}

const BLOCK = 512;
const RECORD = 10_240;

/** An octal number in a field of `width` bytes: zero-padded digits and a NUL. */
function octal(value: number, width: number): string {
  const digits = value.toString(8);
  if (digits.length > width - 1) throw new Error(`archive: ${value} does not fit a ${width}-byte field`);
  return `${digits.padStart(width - 1, '0')}\0`;
}

/** ustar's name and prefix for a path, or undefined when it needs a PAX record. */
function splitPath(path: string): { name: string; prefix: string } | undefined {
  const bytes = Buffer.byteLength(path);
  if (bytes <= 100) return { name: path, prefix: '' };
  for (let i = path.indexOf('/'); i >= 0; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name.length > 0) return { name, prefix };
  }
  return undefined;
}

function header(name: string, prefix: string, size: number, type: '0' | 'x'): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(0o644, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(0, 12), 136, 'ascii');
  h.write(' '.repeat(8), 148, 'ascii');
  h.write(type, 156, 'ascii');
  h.write('ustar\u000000', 257, 'binary');
  h.write(octal(0, 8), 329, 'ascii');
  h.write(octal(0, 8), 337, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

const padded = (data: Buffer) => Buffer.concat([data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK, 0)]);

/** A PAX record `"<len> path=<path>\n"`, whose length counts its own digits. */
function paxPath(path: string): Buffer {
  const body = ` path=${path}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return Buffer.from(`${len}${body}`, 'utf8');
}

/** The uncompressed tar of the files, in path-byte order. */
export function skillTar(files: readonly ArchiveFile[]): Buffer {
  const sorted = [...files].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const parts: Buffer[] = [];
  for (const file of sorted) {
    const content = typeof file.content === 'string' ? Buffer.from(file.content, 'utf8') : file.content;
    const split = splitPath(file.path);
    if (split) {
      parts.push(header(split.name, split.prefix, content.length, '0'));
    } else {
      const record = paxPath(file.path);
      parts.push(header('PaxHeader', '', record.length, 'x'), padded(record));
      parts.push(header(Buffer.from(file.path).subarray(0, 100).toString('latin1'), '', content.length, '0'));
    }
    parts.push(padded(content));
  }
  parts.push(Buffer.alloc(2 * BLOCK, 0));
  const tar = Buffer.concat(parts);
  return Buffer.concat([tar, Buffer.alloc((RECORD - (tar.length % RECORD)) % RECORD, 0)]);
}

/** The archive's bytes: the tar, gzip-compressed with a header that names no time and no system. */
export function skillArchive(files: readonly ArchiveFile[]): Buffer {
  const gz = gzipSync(skillTar(files), { level: 9 });
  // RFC 1952: MTIME (bytes 4-7) 0, XFL (8) 2 = maximum compression, OS (9) 255 = unknown.
  gz.writeUInt32LE(0, 4);
  gz[8] = 2;
  gz[9] = 255;
  return gz;
}

/** `sha256:<hex>` of an artifact's raw bytes: the discovery draft's `digest`. */
export const artifactDigest = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
