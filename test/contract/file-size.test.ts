import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect } from 'chai';

const ROOT = join(import.meta.dirname, '../..');
const LIMIT = 300;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** The files docs/architecture.md names under "Files over 300 lines", each with its reason. */
function writtenReasons(): Map<string, string> {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = doc.split(/^## /m).find((s) => s.startsWith('Files over 300 lines')) ?? '';
  const reasons = new Map<string, string>();
  for (const m of section.matchAll(/^- `([^`]+)`: (.+)$/gm)) if (m[1] && m[2]) reasons.set(m[1], m[2]);
  return reasons;
}

describe('application files stay small (docs/architecture.md, "Files over 300 lines")', () => {
  const lines = new Map(
    ['src', 'jobs', 'workers']
      .flatMap(sourceFiles)
      .map((f) => [f, readFileSync(join(ROOT, f), 'utf8').split('\n').length] as const),
  );
  const reasons = writtenReasons();

  it(`no application file is over ${LIMIT} lines without a written reason`, () => {
    const unexplained = [...lines].filter(([f, n]) => n > LIMIT && !reasons.has(f)).map(([f, n]) => `${f} (${n})`);
    expect(unexplained, 'split these files, or give the reason in docs/architecture.md').to.deep.equal([]);
  });

  it('every written reason is for a file that is still over the limit', () => {
    const stale = [...reasons.keys()].filter((f) => (lines.get(f) ?? 0) <= LIMIT);
    expect(stale, 'remove these lines from docs/architecture.md').to.deep.equal([]);
  });
});
