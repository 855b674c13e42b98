import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The service's source directory: `src/` when run from source, `dist/src/` when compiled. */
const SOURCE_DIR = join(import.meta.dirname, '..');
/** Where package-lock.json may be: the repository's root, or the image's /app above dist/. */
const LOCK_FILES = [join(SOURCE_DIR, '../package-lock.json'), join(SOURCE_DIR, '../../package-lock.json')];

/**
 * A digest of a directory's code: every file under it whose name ends in one of `extensions`
 * (its path relative to the directory, and its bytes), in path order, then each of `extra` that
 * exists (its name and bytes).
 */
export function directoryFingerprint(dir: string, extensions: string[], extra: string[] = []): string {
  const hash = createHash('sha256');
  const files = (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[])
    .filter((f) => extensions.some((ext) => f.endsWith(ext)) && statSync(join(dir, f)).isFile())
    .sort();
  for (const file of files) {
    const bytes = readFileSync(join(dir, file));
    hash.update(`${file}\0${bytes.length}\0`).update(bytes);
  }
  for (const path of extra.filter((p) => existsSync(p))) {
    const bytes = readFileSync(path);
    hash.update(`extra\0${bytes.length}\0`).update(bytes);
  }
  return hash.digest('hex');
}

let fingerprint: string | undefined;

/**
 * A digest of the code this process runs: every file of the service's source directory (as `.ts`
 * from source or `.js` compiled, with the SQL and JSON it reads) and the package-lock.json that
 * pins its dependencies. Two processes of the same build agree; any change to either gives another
 * digest. What is kept on the strength of "same inputs, same output" (the agents the full
 * recompute leaves alone, docs/documents.md) names it, so a deploy that changes how a document is
 * rendered renders every document again. Read once per process (a few milliseconds).
 */
export function codeFingerprint(): string {
  fingerprint ??= directoryFingerprint(SOURCE_DIR, ['.ts', '.js', '.mjs', '.json', '.sql'], LOCK_FILES);
  return fingerprint;
}
