import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The evaluation set: genuine skill folders, and the verdict and rules each is expected to get. */
export const FIXTURES = fileURLToPath(new URL('../../fixtures/skills/', import.meta.url));

export interface Expectation {
  verdict: 'pass' | 'warn' | 'fail';
  rules: string[];
}

export function expectations(): Record<string, Expectation> {
  return JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8'));
}

/** Every file of a fixture folder as the audit receives it: relative path and UTF-8 text. */
export function skillFiles(name: string): { path: string; content: string }[] {
  const root = join(FIXTURES, name);
  const files: { path: string; content: string }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir).sort()) {
      const full = join(dir, entry);
      if (statSync(full).isDirectory()) walk(full);
      else files.push({ path: relative(root, full).split('\\').join('/'), content: readFileSync(full, 'utf8') });
    }
  };
  walk(root);
  return files;
}
