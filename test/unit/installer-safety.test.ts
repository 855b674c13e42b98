import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from '../../src/cli/cli-error.js';
import { parseUsdc } from '../../src/cli/market-client.js';
import { unsafePathReason } from '../../src/cli/safe-paths.js';
import { writeSkill } from '../../src/cli/skill-writer.js';
import { agentSkillProblems, readFrontmatter } from '../../src/domain/discovery/skill-frontmatter.js';

describe('the installer refuses what it must not write', () => {
  it('accepts the file names of an Agent Skill folder', () => {
    for (const path of ['SKILL.md', 'scripts/run.sh', 'references/a b.md', 'assets/x.v2.json', '.hidden/notes.md'])
      expect(unsafePathReason(path), path).to.equal(undefined);
  });

  it('refuses traversal, absolute, backslash, empty-segment, control-character and non-ASCII names', () => {
    for (const path of [
      '',
      '..',
      '../x',
      'a/../../x',
      'a/..',
      './x',
      'a//b',
      'a/',
      '/etc/passwd',
      'C:/x',
      'a\\b',
      'a\u0000b',
      'a\nb',
      'ré.md',
      'a?b',
      'a#b',
      '[x]',
    ])
      expect(unsafePathReason(path), JSON.stringify(path)).to.be.a('string');
  });

  it('writes nothing when a name is unsafe, and leaves no staging folder behind', async () => {
    const root = mkdtempSync(join(tmpdir(), 'writer-'));
    try {
      const skill = {
        postId: 'p',
        name: 'weather-report',
        version: 1,
        versionLabel: '1.0.0',
        skillDigest: 'sha256:x',
        signer: null,
        files: [
          { path: 'SKILL.md', content: 'x' },
          { path: '../escape.md', content: 'x' },
        ],
      };
      const refused = await writeSkill(root, skill).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(CliError).and.to.have.property('code', 'unsafe_path');
      expect(readdirSync(root)).to.deep.equal([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('reads USDC amounts for --max-price and refuses anything else', () => {
    expect(parseUsdc('2.5')).to.equal(2_500_000n);
    expect(parseUsdc('1')).to.equal(1_000_000n);
    expect(parseUsdc('0.000001')).to.equal(1n);
    for (const bad of ['-1', '1e3', '0.0000001', 'two']) expect(() => parseUsdc(bad), bad).to.throw(CliError);
  });
});

describe('Agent Skill frontmatter', () => {
  it('reads name and description, and names each rule a folder breaks', () => {
    const md =
      '---\nname: weather-report\ndescription: Writes a weather report.\nmetadata:\n  version: "1.1"\n---\n# Body\n';
    expect(readFrontmatter(md)).to.deep.include({ name: 'weather-report', description: 'Writes a weather report.' });
    expect(agentSkillProblems('weather-report', [{ path: 'SKILL.md', content: md }])).to.deep.equal([]);
    expect(agentSkillProblems('other', [{ path: 'SKILL.md', content: md }])).to.deep.equal([
      'frontmatter name "weather-report" differs from the folder name "other"',
    ]);
    expect(agentSkillProblems('x', [{ path: 'README.md', content: md }])).to.deep.equal(['SKILL.md is missing']);
    expect(agentSkillProblems('x', [{ path: 'SKILL.md', content: '# no frontmatter' }])).to.deep.equal([
      'SKILL.md has no YAML frontmatter',
    ]);
    expect(
      agentSkillProblems('bad--name', [{ path: 'SKILL.md', content: '---\nname: bad--name\n---\n' }]),
    ).to.deep.equal(['frontmatter name "bad--name" is not a valid skill name', 'frontmatter description is missing']);
  });
});
