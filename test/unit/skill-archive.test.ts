import { expect } from 'chai';
import { gunzipSync } from 'node:zlib';
import { artifactDigest, skillArchive, skillTar } from '../../src/domain/skills/skill-archive.js';

const FILES = [
  { path: 'SKILL.md', content: '---\nname: tides\ndescription: Tides.\n---\n# Tides\n' },
  { path: 'scripts/run.sh', content: '#!/bin/sh\necho ünïcode\n' },
  { path: 'references/ports.md', content: 'Brest\n' },
];

/** The entries of a tar as (name, size, header fields) read straight from its 512-byte headers. */
function entries(tar: Buffer) {
  const out: Array<{ name: string; prefix: string; type: string; mode: string; mtime: string; uid: string }> = [];
  for (let at = 0; at + 512 <= tar.length; ) {
    const h = tar.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const field = (from: number, len: number) =>
      h
        .subarray(from, from + len)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const size = Number.parseInt(field(124, 12), 8);
    out.push({
      name: field(0, 100),
      prefix: field(345, 155),
      type: field(156, 1),
      mode: field(100, 8),
      mtime: field(136, 12),
      uid: field(108, 8),
    });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe('the skill archive: the same files always give the same bytes', () => {
  it('gives identical bytes for the same files in any order, and a different digest for different files', () => {
    const a = skillArchive(FILES);
    expect(skillArchive([...FILES].reverse()).equals(a)).to.equal(true);
    expect(artifactDigest(a)).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(
      artifactDigest(skillArchive([{ ...FILES[0]!, content: `${FILES[0]!.content} ` }, ...FILES.slice(1)])),
    ).to.not.equal(artifactDigest(a));
  });

  it('writes a gzip header with no time, no name and no system', () => {
    const gz = skillArchive(FILES);
    expect([...gz.subarray(0, 10)]).to.deep.equal([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255]);
    expect(gunzipSync(gz).equals(skillTar(FILES))).to.equal(true);
  });

  it('sorts entries by path bytes and fixes mode, owner and time; the tar fills whole 10,240-byte records', () => {
    const tar = skillTar(FILES);
    expect(tar.length % 10_240).to.equal(0);
    const list = entries(tar);
    expect(list.map((e) => e.name)).to.deep.equal(['SKILL.md', 'references/ports.md', 'scripts/run.sh']);
    for (const e of list) expect(e).to.include({ type: '0', mode: '0000644', mtime: '00000000000', uid: '0000000' });
  });

  it('splits a long path into prefix and name, and carries one that cannot be split in a PAX record', () => {
    const deep = `references/${'d'.repeat(120)}/notes.md`;
    const flat = `${'f'.repeat(150)}.md`;
    const list = entries(skillTar([FILES[0]!, { path: deep, content: 'x' }, { path: flat, content: 'y' }]));
    expect(list.find((e) => e.prefix)).to.include({ prefix: `references/${'d'.repeat(120)}`, name: 'notes.md' });
    const pax = list.findIndex((e) => e.type === 'x');
    expect(pax).to.be.greaterThan(-1);
    expect(list[pax + 1]?.type).to.equal('0');
  });
});
