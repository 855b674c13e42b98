// npm run build: compiles src/, jobs/ and workers/ to dist/ (tsconfig.build.json), then copies the
// files the code reads at run time beside the compiled code, at the same paths relative to it:
// every non-TypeScript file under those folders (SQL migrations, contract artifacts, JSON Schemas)
// and data/ (the OASF taxonomies, read as ../../../data/oasf from src/domain/taxonomy). The code
// finds its files relative to its own module, so the same paths work under tsx and from dist/,
// and dist/ plus the production node_modules is all an image needs.
// Plain JavaScript, so building needs only node and the TypeScript compiler.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist');

// From scratch: a module that was moved or deleted must not linger in dist/ and still be imported.
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
} catch (err) {
  // tsc has printed the errors; a stack trace of this script would only bury them.
  process.exit(typeof err.status === 'number' ? err.status : 1);
}

for (const dir of ['src', 'jobs', 'workers']) {
  cpSync(join(root, dir), join(out, dir), { recursive: true, filter: (from) => !from.endsWith('.ts') });
}
// data/README.md goes too: it carries the licences of the third-party files.
cpSync(join(root, 'data'), join(out, 'data'), { recursive: true });
