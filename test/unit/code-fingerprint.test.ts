import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { codeFingerprint, directoryFingerprint } from '../../src/platform/code-fingerprint.js';

describe('the code fingerprint: what the full recompute names so a deploy renders everything again', () => {
  let dir: string;
  const of = () => directoryFingerprint(dir, ['.ts', '.sql']);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fingerprint-'));
    mkdirSync(join(dir, 'documents'), { recursive: true });
    mkdirSync(join(dir, 'node_modules/dep'), { recursive: true });
    writeFileSync(join(dir, 'documents/badge.ts'), 'export const badge = 1;\n');
    writeFileSync(join(dir, 'main.ts'), 'import "./documents/badge.js";\n');
    writeFileSync(join(dir, 'README.md'), 'not code\n');
    writeFileSync(join(dir, 'node_modules/dep/index.ts'), 'export {};\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is the same for the same files, and moves with a byte or a renamed file', () => {
    const first = of();
    expect(first).to.match(/^[0-9a-f]{64}$/);
    expect(of()).to.equal(first);
    writeFileSync(join(dir, 'README.md'), 'still not code\n');
    writeFileSync(join(dir, 'node_modules/dep/index.ts'), 'export const x = 1;\n');
    expect(of(), 'a file of another kind, or under node_modules').to.equal(first);

    writeFileSync(join(dir, 'documents/badge.ts'), 'export const badge = 2;\n');
    const edited = of();
    expect(edited).to.not.equal(first);
    renameSync(join(dir, 'documents/badge.ts'), join(dir, 'documents/badges.ts'));
    expect(of()).to.not.equal(edited);
    renameSync(join(dir, 'documents/badges.ts'), join(dir, 'documents/badge.ts'));
    expect(of()).to.equal(edited);
    expect(directoryFingerprint(join(dir, 'absent'), ['.ts'])).to.equal(undefined);
  });

  it("is read once for this process's own code", () => {
    const mine = codeFingerprint();
    expect(mine).to.match(/^[0-9a-f]{64}$/);
    expect(codeFingerprint()).to.equal(mine);
  });
});
