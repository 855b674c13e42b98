// npm run build: first compiles each workspace package in packages/ to its own dist/ (with its
// tsconfig.json): plain node loads it from there through the package's `exports`, and the app is
// compiled against its declarations (the `paths` of tsconfig.build.json). Then compiles src/, jobs/
// and workers/ to dist/ (tsconfig.build.json), and copies the files the code reads at run time
// beside the compiled code, at the same paths relative to it: every non-TypeScript file under
// those folders (SQL migrations, contract artifacts, JSON Schemas) and data/ (the OASF taxonomies,
// read as ../../../data/oasf from src/domain/taxonomy). The code finds its files relative to its
// own module, so the same paths work under tsx and from dist/, and dist/, packages/*/dist plus the
// production node_modules (where each package is a link to its folder) are all an image needs.
// Plain JavaScript, so building needs only node and the TypeScript compiler.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist');

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
function compile(project) {
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
  } catch (err) {
    // tsc has printed the errors; a stack trace of this script would only bury them.
    process.exit(typeof err.status === 'number' ? err.status : 1);
  }
}

// The packages first: the app is compiled against their declarations. Each from scratch, as dist/ is.
const packages = join(root, 'packages');
for (const name of existsSync(packages) ? readdirSync(packages).sort() : []) {
  const project = join(packages, name, 'tsconfig.json');
  if (!existsSync(project)) continue;
  rmSync(join(packages, name, 'dist'), { recursive: true, force: true });
  compile(project);
}

// From scratch: a module that was moved or deleted must not linger in dist/ and still be imported.
rmSync(out, { recursive: true, force: true });
compile(join(root, 'tsconfig.build.json'));

for (const dir of ['src', 'jobs', 'workers']) {
  cpSync(join(root, dir), join(out, dir), { recursive: true, filter: (from) => !from.endsWith('.ts') });
}
// data/README.md goes too: it carries the licences of the third-party files.
cpSync(join(root, 'data'), join(out, 'data'), { recursive: true });
