import { lstat, readlink } from 'node:fs/promises';
import { isAbsolute, join, parse, relative, resolve, sep } from 'node:path';
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

/**
 * Refuses a folder whose path runs through a symbolic link, or through a file: every component
 * below `base` (the working directory, when the folder lies inside it; the file system's root
 * otherwise) that exists must be a real folder. A link planted in a project (`.agents -> ~/.ssh`)
 * would otherwise carry what is written to wherever it points. Components not there yet are fine:
 * the writer creates them as folders.
 */
export async function assertNoLinkOnTheWay(base: string, dir: string): Promise<void> {
  const below = relative(base, dir);
  const outside = below === '..' || below.startsWith(`..${sep}`) || isAbsolute(below);
  const from = outside ? parse(dir).root : base;
  let path = from;
  for (const segment of relative(from, dir).split(sep).filter(Boolean)) {
    path = join(path, segment);
    const stat = await lstat(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw new CliError('target_unreadable', `refused: cannot inspect ${path}: ${err.message}`);
    });
    if (!stat) return;
    if (stat.isSymbolicLink())
      throw new CliError(
        'link_refused',
        `refused: ${path} is a symbolic link (to ${await readlink(path).catch(() => '?')}); ` +
          'nothing is written through a link: name the folder by its real path',
      );
    if (!stat.isDirectory()) throw new CliError('target_not_a_folder', `refused: ${path} is a file, not a folder`);
  }
}
