import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect } from 'chai';

const ROOT = join(import.meta.dirname, '../..');
/** Past this, a file gets a look: does it still own one concept? The answer is written down. */
const LOOK_AT = 400;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Generated files (their first comment says so) are read by their generator, not by people. */
const generated = (text: string) => /^\/\*\*?[\s\S]*?\bgenerated\b/i.test(text.slice(0, 400));

/** The files docs/architecture.md names under "Long files", each with the one concept it owns. */
function writtenConcepts(): Map<string, string> {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = doc.split(/^## /m).find((s) => s.startsWith('Long files')) ?? '';
  const concepts = new Map<string, string>();
  for (const m of section.matchAll(/^- `([^`]+)`: (.+)$/gm)) if (m[1] && m[2]) concepts.set(m[1], m[2]);
  return concepts;
}

describe('a file owns one concept (docs/architecture.md, "Long files")', () => {
  const lines = new Map(
    ['src', 'jobs', 'workers']
      .flatMap(sourceFiles)
      .map((f) => [f, readFileSync(join(ROOT, f), 'utf8')] as const)
      .filter(([, text]) => !generated(text))
      .map(([f, text]) => [f, text.split('\n').length] as const),
  );
  const concepts = writtenConcepts();

  it(`a file past ${LOOK_AT} lines has been looked at: the one concept it owns is written down`, () => {
    const unexplained = [...lines].filter(([f, n]) => n > LOOK_AT && !concepts.has(f)).map(([f, n]) => `${f} (${n})`);
    expect(
      unexplained,
      'split what is a second concept into its own module, or name the one concept in docs/architecture.md',
    ).to.deep.equal([]);
  });

  it('every written concept is for a file that is still long', () => {
    const stale = [...concepts.keys()].filter((f) => (lines.get(f) ?? 0) <= LOOK_AT);
    expect(stale, 'remove these lines from docs/architecture.md').to.deep.equal([]);
  });
});
