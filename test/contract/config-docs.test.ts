import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_DOC_PATH, renderConfigTable, withConfigTable } from '../../scripts/config-docs.js';
import { EnvSchema } from '../../src/platform/config.js';

const ROOT = join(import.meta.dirname, '../..');

/**
 * Variables the application code reads that are not the service's configuration, each with
 * where it is documented instead.
 */
const NOT_CONFIG: Record<string, string> = {
  SKILL_MARKET_URL: 'the skill-market client (docs/cli.md)',
  SKILL_MARKET_HOME: 'the skill-market client (docs/cli.md)',
  SKILL_MARKET_KEY: 'the skill-market client (docs/cli.md)',
  SKILL_MARKET_RPC_URL: 'the skill-market client (docs/cli.md)',
  SKILL_MARKET_IDENTITY_REGISTRY: 'the skill-market client (docs/cli.md)',
};

/**
 * The audit (src/domain/audit) is left out: it names `process.env` and `HOME` as what it looks for
 * in a skill's scripts, and never reads the environment itself.
 */
const sourceFiles = (): string[] =>
  ['src', 'jobs', 'workers'].flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|mts|js|mjs)$/.test(f))
      .map((f) => join(dir, f))
      .filter((f) => !f.startsWith(join('src', 'domain', 'audit'))),
  );

/** Every variable name a file reads from an environment object: `env.X`, `env['X']`, `const { X } = env`. */
function variablesRead(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(
    /\benv\s*(?:\?\.|\.)\s*([A-Z][A-Z0-9_]*)|\benv\s*\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\]/g,
  ))
    names.add((m[1] ?? m[2])!);
  for (const m of text.matchAll(/\{([^{}]*)\}\s*=\s*(?:process\.)?env\b/g))
    for (const name of m[1]!.matchAll(/\b([A-Z][A-Z0-9_]*)\b/g)) names.add(name[1]!);
  return [...names];
}

describe('docs/configuration.md and the environment the code reads agree with the configuration declaration', () => {
  it('the variable table is the one the declaration writes', () => {
    const docs = readFileSync(CONFIG_DOC_PATH, 'utf8');
    expect(docs).to.equal(
      withConfigTable(docs, renderConfigTable()),
      'docs/configuration.md differs from src/platform/config.ts: run `npm run docs:config` and commit the result',
    );
  });

  it('every variable the code reads is declared in src/platform/config.ts, or listed here as not configuration', () => {
    const declared = new Set(Object.keys(EnvSchema.shape));
    const read = new Map<string, string>();
    for (const file of sourceFiles())
      for (const name of variablesRead(readFileSync(join(ROOT, file), 'utf8'))) read.set(name, file);
    const undeclared = [...read].filter(([name]) => !declared.has(name) && !(name in NOT_CONFIG));
    expect(
      undeclared.map(([name, file]) => `${name} (${file})`),
      'declare each in src/platform/config.ts, then run `npm run docs:config`',
    ).to.deep.equal([]);
    const stale = Object.keys(NOT_CONFIG).filter((name) => !read.has(name) || declared.has(name));
    expect(stale, 'listed as not configuration but no longer read, or declared after all').to.deep.equal([]);
  });

  it('only src/platform/config.ts reads process.env', () => {
    const readers = sourceFiles().filter(
      (file) =>
        file !== join('src', 'platform', 'config.ts') && /process\.env\b/.test(readFileSync(join(ROOT, file), 'utf8')),
    );
    expect(readers, 'read the variable through Config instead').to.deep.equal([]);
  });

  it('the variables that are not configuration are named in the prose of docs/configuration.md', () => {
    const docs = readFileSync(CONFIG_DOC_PATH, 'utf8');
    const prose = withConfigTable(docs, '');
    expect(Object.keys(NOT_CONFIG).filter((name) => !prose.includes(`\`${name}\``))).to.deep.equal([]);
  });
});
