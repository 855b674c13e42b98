import { createHash } from 'node:crypto';

/**
 * Integrity of a skill's files, in the form of the Agent Skills discovery RFC (`sha256:<64 hex>`):
 * each file's digest is the SHA-256 of its UTF-8 bytes; the skill digest is the SHA-256 of one
 * line per file, `<path>\0<file hex>\n`, in the order of the paths' UTF-8 bytes. The skill digest
 * names a version: two versions with the same files have the same digest, whatever else differs.
 * Pure and dependency-free: the marketplace, its installer and any buyer compute the same values.
 */

export const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;

export interface SkillFile {
  path: string;
  content: string;
}

const hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** `sha256:<hex>` of a file's UTF-8 bytes. */
export function fileDigest(content: string): string {
  return `sha256:${hex(Buffer.from(content, 'utf8'))}`;
}

/** Paths compared as UTF-8 bytes, so every implementation sorts them alike (not by UTF-16 units). */
function byPathBytes(a: SkillFile, b: SkillFile): number {
  return Buffer.compare(Buffer.from(a.path, 'utf8'), Buffer.from(b.path, 'utf8'));
}

/** The skill digest over every file (see above). Paths must be unique. */
export function skillDigest(files: readonly SkillFile[]): string {
  const lines = [...files]
    .sort(byPathBytes)
    .map((f) => `${f.path}\0${fileDigest(f.content).slice('sha256:'.length)}\n`)
    .join('');
  return `sha256:${hex(Buffer.from(lines, 'utf8'))}`;
}

/** Each file's digest, in path order, with its size: what a manifest or an index lists. */
export function fileDigests(files: readonly SkillFile[]): { path: string; digest: string; bytes: number }[] {
  return [...files]
    .sort(byPathBytes)
    .map((f) => ({ path: f.path, digest: fileDigest(f.content), bytes: Buffer.byteLength(f.content, 'utf8') }));
}
