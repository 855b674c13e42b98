import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The service's source directory: `src/` when run from source, `dist/src/` when compiled. */
const SOURCE_DIR = fileURLToPath(new URL('..', import.meta.url));
/** What a document can show besides the code: the data files beside it (the OASF captions), as the build copies them. */
const DATA_DIR = join(SOURCE_DIR, '../data');
/** The workspace packages the code imports: beside src/ in the repository, above dist/ in the image. */
const PACKAGE_DIRS = [join(SOURCE_DIR, '../packages'), join(SOURCE_DIR, '../../packages')];
/** Where package-lock.json may be: the repository's root, or the image's /app above dist/. */
const LOCK_FILES = [join(SOURCE_DIR, '../package-lock.json'), join(SOURCE_DIR, '../../package-lock.json')];

const CODE = ['.ts', '.js', '.mjs', '.json', '.sql'];

/**
 * A digest of a directory's files whose names end in one of `extensions` (each one's path relative
 * to the directory, and its bytes), in path order, leaving out anything under node_modules.
 * Undefined when the directory does not exist.
 */
export function directoryFingerprint(dir: string, extensions: string[]): string | undefined {
  if (!existsSync(dir)) return undefined;
  const hash = createHash('sha256');
  const files = (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[])
    .filter(
      (f) =>
        extensions.some((ext) => f.endsWith(ext)) &&
        !f.split(/[\\/]/).includes('node_modules') &&
        statSync(join(dir, f)).isFile(),
    )
    .sort();
  for (const file of files) {
    const bytes = readFileSync(join(dir, file));
    hash.update(`${file}\0${bytes.length}\0`).update(bytes);
  }
  return hash.digest('hex');
}

let fingerprint: string | undefined;

/**
 * A digest of the code this process runs: every file of the service's source directory (as `.ts`
 * from source or `.js` compiled, with the SQL and JSON it reads), the data files beside it, the
 * workspace packages, the package-lock.json that pins the dependencies, and the Node.js version.
 * Two processes of the same build on the same Node.js agree; any change to one of these gives
 * another digest. What is kept on the strength of "same inputs, same output" (the lists and
 * agents the full recompute leaves alone, docs/documents.md) names it, so a deploy that changes
 * how anything is ranked or rendered does it all again. Read once per process (a few milliseconds).
 */
export function codeFingerprint(): string {
  if (fingerprint !== undefined) return fingerprint;
  const lock = LOCK_FILES.find((p) => existsSync(p));
  fingerprint = createHash('sha256')
    .update(
      JSON.stringify([
        directoryFingerprint(SOURCE_DIR, CODE),
        directoryFingerprint(DATA_DIR, ['.json', '.yaml', '.yml', '.txt', '.csv']),
        PACKAGE_DIRS.map((d) => directoryFingerprint(d, CODE)),
        lock ? createHash('sha256').update(readFileSync(lock)).digest('hex') : null,
        process.version,
      ]),
    )
    .digest('hex');
  return fingerprint;
}
