import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

const ROOT = join(import.meta.dirname, '../..');
const DEPCRUISE = join(ROOT, 'node_modules/.bin/depcruise');
const run = promisify(execFile);

/**
 * A throwaway tree laid out like the service, checked with the project's own `.dependency-cruiser.cjs`:
 * the rules CI runs (`npm run deps`) must refuse every kind of import docs/architecture.md forbids.
 */
function makeTree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  copyFileSync(join(ROOT, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  // A stand-in for a framework package, so the tree resolves it under its own node_modules.
  mkdirSync(join(dir, 'node_modules/express'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/express/package.json'), '{"name":"express","main":"index.js"}');
  writeFileSync(join(dir, 'node_modules/express/index.js'), 'module.exports = {};\n');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

async function cruise(dir: string): Promise<{ code: number; output: string }> {
  const args = [
    ...['--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'err'],
    ...['src', 'jobs', 'workers', 'packages'],
  ];
  try {
    const { stdout, stderr } = await run(DEPCRUISE, args, { cwd: dir });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

const target = 'export const value = 1;\n';
const importing = (...from: string[]) =>
  `${from.map((f, i) => `import * as m${i} from '${f}';\n`).join('')}export const probe = [${from.map((_, i) => `m${i}`)}];\n`;

/** Modules every probe tree has: one per layer, each importing only what the rules allow. */
const lawful: Record<string, string[]> = {
  'src/main.ts': ['./bootstrap/root.js'],
  'src/bootstrap/root.ts': ['../api/app.js', '../../workers/queue.worker.js'],
  'src/api/app.ts': ['../domain/area/area.use-cases.js', 'express'],
  'src/domain/area/area.use-cases.ts': ['../../documents/thing.renderer.js', './rule.js'],
  'src/domain/area/rule.ts': ['../../data/thing.repository.js'],
  'src/documents/thing.renderer.ts': ['../data/schema.js'],
  'src/data/schema.ts': [],
  'src/data/thing.repository.ts': ['../platform/helper.js'],
  'src/platform/helper.ts': [],
  'jobs/thing.job.ts': ['../src/domain/area/area.use-cases.js'],
  'workers/queue.worker.ts': ['../jobs/thing.job.js'],
  'test/support/anything.ts': [],
  'src/domain/payments/paywall/paywall.ts': [
    '../protocol/codec.js',
    '../facilitators/pool.js',
    '../ledger/settlement.js',
    '../../../data/thing.repository.js',
  ],
  'src/domain/payments/protocol/codec.ts': ['../../../data/schema.js', '../../../platform/helper.js'],
  'src/domain/payments/facilitators/pool.ts': ['../protocol/codec.js'],
  'src/domain/payments/ledger/settlement.ts': ['../protocol/codec.js', '../../../data/thing.repository.js'],
  // The client and the package it shares with the service (resolved through tsconfig.json's paths).
  'src/cli/main.ts': ['./market-api.js', '@skill-market/skill-protocol/skill-digest', 'node:path'],
  'src/cli/market-api.ts': ['@skill-market/skill-protocol/skill-digest'],
  'packages/skill-protocol/src/skill-digest.ts': ['node:crypto'],
};

/** The files of a tree with these imports: a module without imports exports a value. */
const tree = (imports: Record<string, string[]>) =>
  Object.fromEntries(Object.entries(imports).map(([f, from]) => [f, from.length ? importing(...from) : target]));

/** One forbidden import per rule: the file that makes it, what it imports, the rule that must refuse it. */
const violations: Array<{ rule: string; file: string; imports: string }> = [
  { rule: 'platform-is-the-floor', file: 'src/platform/up.ts', imports: '../api/app.js' },
  { rule: 'data-below-everything-but-platform', file: 'src/data/up.ts', imports: '../domain/area/rule.js' },
  { rule: 'documents-run-no-use-cases', file: 'src/documents/up.ts', imports: '../domain/area/area.use-cases.js' },
  { rule: 'documents-below-domain', file: 'src/documents/rule-user.ts', imports: '../domain/area/rule.js' },
  { rule: 'documents-below-entry-points', file: 'src/documents/route-user.ts', imports: '../api/app.js' },
  {
    rule: 'documents-read-rows-not-the-database',
    file: 'src/documents/sql.ts',
    imports: '../data/thing.repository.js',
  },
  { rule: 'domain-below-entry-points', file: 'src/domain/area/up.ts', imports: '../../api/app.js' },
  { rule: 'api-beside-jobs', file: 'src/api/job-user.ts', imports: '../../jobs/thing.job.js' },
  { rule: 'jobs-beside-api', file: 'jobs/route-user.ts', imports: '../src/api/app.js' },
  { rule: 'workers-beside-api', file: 'workers/route-user.ts', imports: '../src/api/app.js' },
  { rule: 'only-the-entry-imports-bootstrap', file: 'src/domain/area/wiring.ts', imports: '../../bootstrap/root.js' },
  { rule: 'entry-is-thin', file: 'src/main.ts', imports: './domain/area/rule.js' },
  { rule: 'every-module-has-a-layer', file: 'src/stray.ts', imports: './platform/helper.js' },
  { rule: 'no-framework-below-entry-points', file: 'src/domain/area/http.ts', imports: 'express' },
  { rule: 'no-test-code-in-the-service', file: 'src/api/fixture-user.ts', imports: '../../test/support/anything.js' },
  {
    rule: 'payments-protocol-is-pure',
    file: 'src/domain/payments/protocol/reads.ts',
    imports: '../../../data/thing.repository.js',
  },
  {
    rule: 'payments-lifecycle-runs-one-way',
    file: 'src/domain/payments/ledger/calls-back.ts',
    imports: '../paywall/paywall.js',
  },
  { rule: 'cli-is-a-client', file: 'src/cli/market-api.ts', imports: '../domain/area/rule.js' },
  {
    rule: 'skill-protocol-is-pure',
    file: 'packages/skill-protocol/src/skill-digest.ts',
    imports: '../../../src/platform/helper.js',
  },
  {
    rule: 'facilitators-know-no-ledger',
    file: 'src/domain/payments/facilitators/records.ts',
    imports: '../ledger/settlement.js',
  },
];

describe('layer rules (npm run deps): every forbidden import fails CI', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('a tree that keeps to the layers passes', async () => {
    const dir = makeTree(tree(lawful));
    dirs.push(dir);
    const { code, output } = await cruise(dir);
    expect(code, output).to.equal(0);
  });

  it('each kind of forbidden import is refused, naming its rule and the import', async () => {
    const imports = { ...lawful };
    for (const v of violations) imports[v.file] = [...(imports[v.file] ?? []), v.imports];
    const dir = makeTree(tree(imports));
    dirs.push(dir);
    const { code, output } = await cruise(dir);
    expect(code, output).to.not.equal(0);
    for (const v of violations) {
      const line = output.split('\n').find((l) => l.includes(`${v.rule}:`) && l.includes(v.file));
      expect(line, `${v.rule} did not refuse ${v.file} → ${v.imports}\n${output}`).to.be.a('string');
    }
  });

  it('an import cycle inside a layer is refused', async () => {
    const dir = makeTree({
      ...tree(lawful),
      'src/domain/area/a.ts': `import { b } from './b.js';\nexport const a = () => b;\n`,
      'src/domain/area/b.ts': `import { a } from './a.js';\nexport const b = () => a;\n`,
    });
    dirs.push(dir);
    const { code, output } = await cruise(dir);
    expect(code, output).to.not.equal(0);
    expect(output).to.match(/no-circular:.*src\/domain\/area\/[ab]\.ts/);
  });
});
