import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

const ROOT = join(import.meta.dirname, '../..');
const GENERATED = join(ROOT, 'src/data/schema.generated.ts');
const run = promisify(execFile);

/** `npm run db:types -- --check [--file=…]`: its exit code and everything it printed. */
async function check(...args: string[]): Promise<{ code: number; output: string }> {
  const command = [join(ROOT, 'node_modules/.bin/tsx'), 'scripts/db-types.ts', '--check', ...args];
  try {
    const { stdout, stderr } = await run(command[0]!, command.slice(1), { cwd: ROOT });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/**
 * The table types Kysely checks queries against are generated from the database the migrations
 * build (docs/data-model.md): a migration committed without regenerating them fails here, as in CI.
 */
describe('database types generated from the migrations', function () {
  this.timeout(120_000);

  it('src/data/schema.generated.ts is what the migrations give', async () => {
    const { code, output } = await check();
    expect(code, output).to.equal(0);
  });

  it('refuses a file that differs, showing the difference and how to regenerate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'db-types-'));
    try {
      const stale = join(dir, 'schema.generated.ts');
      // As if a migration had added `bazaar_listings.buyers` after the file was generated.
      writeFileSync(stale, readFileSync(GENERATED, 'utf8').replace(/\n {2}buyers: number;/, ''));
      const { code, output } = await check(`--file=${stale}`);
      expect(code).to.equal(1);
      expect(output).to.include('npm run db:types');
      expect(output).to.match(/^\+ {2}buyers: number;$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
