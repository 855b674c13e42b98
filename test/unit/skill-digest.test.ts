import { expect } from 'chai';
import { fileDigest, fileDigests, skillDigest } from '@skill-market/skill-protocol/skill-digest';

// Values computed independently (Python hashlib) from the formula in docs/skills.md.
const FILES = [
  { path: 'scripts/run.sh', content: 'echo hi\n' },
  { path: 'SKILL.md', content: '---\nname: tides\n---\n# Tides\n' },
  { path: 'references/é.md', content: 'ünïcode' },
];

describe('skill digests', () => {
  it('a file digest is sha256 of its UTF-8 bytes', () => {
    expect(fileDigest('ünïcode')).to.equal('sha256:b8be8967e4de3eb294835b1748184523179767250c2d510451e9d3a03df08977');
  });

  it('the skill digest covers every path and content, in byte order of the paths', () => {
    const digest = skillDigest(FILES);
    expect(digest).to.equal('sha256:7e126a77713d256daea6edbb3f39804b68e3ec7b35e3c92ab29e5d61feb9f9f5');
    expect(skillDigest([...FILES].reverse())).to.equal(digest);
    expect(skillDigest(FILES.map((f, i) => (i === 0 ? { ...f, content: 'echo ho\n' } : f)))).to.not.equal(digest);
    expect(skillDigest(FILES.map((f, i) => (i === 0 ? { ...f, path: 'scripts/go.sh' } : f)))).to.not.equal(digest);
  });

  it('lists each file with its digest and size, in path order', () => {
    expect(fileDigests(FILES).map((f) => [f.path, f.bytes])).to.deep.equal([
      ['SKILL.md', 28],
      ['references/é.md', 9],
      ['scripts/run.sh', 8],
    ]);
  });
});
