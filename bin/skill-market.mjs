#!/usr/bin/env node
// The installer's command line (src/cli/main.ts): the compiled build when there is one, the
// TypeScript sources through tsx in a checkout.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist/src/cli/main.js');
let cli;
if (existsSync(built)) {
  cli = await import(pathToFileURL(built).href);
} else {
  const { tsImport } = await import('tsx/esm/api');
  cli = await tsImport(pathToFileURL(join(root, 'src/cli/main.ts')).href, import.meta.url);
}
process.exitCode = await cli.run(process.argv.slice(2), {
  cwd: process.cwd(),
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
