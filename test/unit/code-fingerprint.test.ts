import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { codeFingerprint, directoryFingerprint } from '../../src/platform/code-fingerprint.js';

describe('the code fingerprint: what the full recompute names so a deploy renders everything again', () => {
  let dir: string;
  const lock = () => join(dir, 'package-lock.json');
  const code = () => join(dir, 'src');
  const of = () => directoryFingerprint(code(), ['.ts', '.sql'], [lock()]);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fingerprint-'));
    mkdirSync(join(code(), 'documents'), { recursive: true });
    writeFileSync(join(code(), 'documents/badge.ts'), 'export const badge = 1;\n');
    writeFileSync(join(code(), 'main.ts'), 'import "./documents/badge.js";\n');
    writeFileSync(join(code(), 'README.md'), 'not code\n');
    writeFileSync(lock(), '{"lockfileVersion":3}\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is the same for the same files, and moves with a byte, a renamed file or the lock file', () => {
    const first = of();
    expect(first).to.match(/^[0-9a-f]{64}$/);
    expect(of()).to.equal(first);
    writeFileSync(join(code(), 'README.md'), 'still not code\n');
    expect(of(), 'a file of another kind').to.equal(first);

    writeFileSync(join(code(), 'documents/badge.ts'), 'export const badge = 2;\n');
    const edited = of();
    expect(edited).to.not.equal(first);
    renameSync(join(code(), 'documents/badge.ts'), join(code(), 'documents/badges.ts'));
    expect(of()).to.not.equal(edited);
    renameSync(join(code(), 'documents/badges.ts'), join(code(), 'documents/badge.ts'));
    expect(of()).to.equal(edited);
    writeFileSync(lock(), '{"lockfileVersion":3,"packages":{}}\n');
    expect(of()).to.not.equal(edited);
  });

  it("is read once for this process's own code", () => {
    const mine = codeFingerprint();
    expect(mine).to.match(/^[0-9a-f]{64}$/);
    expect(codeFingerprint()).to.equal(mine);
  });
});
