import { isAbsolute, relative, resolve, sep } from 'node:path';
import { CliError } from './cli-error.js';

/**
 * Why a skill's file name cannot be written inside its folder, or undefined when it can. The rules
 * are the discovery RFC's: relative, `/` as separator, printable ASCII without `\ ? # [ ]`, no
 * empty, `.` or `..` segment. A name that breaks them is refused before anything is written,
 * whatever the server or a proxy on the way sent.
 */
export function unsafePathReason(path: string): string | undefined {
  if (path.length === 0) return 'is empty';
  if (path.length > 255) return 'is longer than 255 characters';
  if (path.startsWith('/') || isAbsolute(path) || /^[A-Za-z]:/.test(path)) return 'is absolute';
  if (!/^[\x20-\x7E]+$/.test(path)) return 'holds a control or non-ASCII character';
  if (/[\\?#[\]]/.test(path)) return 'holds one of \\ ? # [ ]';
  const segments = path.split('/');
  if (segments.some((s) => s === '..')) return 'climbs out of the skill folder (..)';
  if (segments.some((s) => s === '.' || s === '')) return 'has an empty or "." segment';
  return undefined;
}

/** Refuses the first unsafe or repeated file name (code `unsafe_path`). */
export function assertSafePaths(paths: readonly string[]): void {
  const seen = new Set<string>();
  for (const path of paths) {
    const reason = unsafePathReason(path);
    if (reason) throw new CliError('unsafe_path', `refused: the file name ${JSON.stringify(path)} ${reason}`);
    const folded = path.toLowerCase();
    if (seen.has(folded)) throw new CliError('unsafe_path', `refused: the file name ${JSON.stringify(path)} repeats`);
    seen.add(folded);
  }
}

/** `path` resolved under `root`; throws unless the result stays strictly inside `root`. */
export function inside(root: string, path: string): string {
  const target = resolve(root, path);
  const rel = relative(root, target);
  if (!rel || rel.startsWith('..') || isAbsolute(rel) || rel.split(sep).includes('..'))
    throw new CliError('unsafe_path', `refused: ${JSON.stringify(path)} resolves outside ${root}`);
  return target;
}
