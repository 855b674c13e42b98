#!/usr/bin/env node
// The skill-market command line (src/cli/main.ts): the TypeScript sources through tsx in a
// checkout (so a build left in dist/ never runs older code than the sources), the compiled build
// where tsx is not installed (a production install). tsx reads the checkout's tsconfig.json
// whatever the working directory, so @skill-market/skill-protocol resolves to the package's
// sources (its `paths`), not to a build of it.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src/cli/main.ts');
const built = join(root, 'dist/src/cli/main.js');

async function load() {
  if (existsSync(source)) {
    const tsx = await import('tsx/esm/api').catch(() => undefined);
    if (tsx)
      return tsx.tsImport(pathToFileURL(source).href, {
        parentURL: import.meta.url,
        tsconfig: join(root, 'tsconfig.json'),
      });
  }
  return import(pathToFileURL(built).href);
}

const cli = await load();
process.exitCode = await cli.run(process.argv.slice(2), {
  cwd: process.cwd(),
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
