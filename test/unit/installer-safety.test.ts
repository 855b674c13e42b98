import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from '../../src/cli/cli-error.js';
import { parseUsdc } from '../../src/cli/usdc.js';
import { unsafePathReason } from '../../src/cli/safe-paths.js';
import { writeSkill } from '../../src/cli/skill-writer.js';
import { agentSkillProblems, readFrontmatter } from '@skill-market/skill-protocol/skill-frontmatter';

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
      const refused = await writeSkill(root, skill, { base: root, replace: false }).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(CliError).and.to.have.property('code', 'unsafe_path');
      expect(readdirSync(root)).to.deep.equal([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  describe('links and existing folders', () => {
    let base: string;
    let outside: string;
    const skill = {
      postId: 'p',
      name: 'weather-report',
      version: 1,
      versionLabel: '1.0.0',
      skillDigest: 'sha256:x',
      signer: null,
      files: [
        { path: 'SKILL.md', content: 'new' },
        { path: 'references/units.md', content: 'new' },
      ],
    };
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => e,
      );

    beforeEach(() => {
      base = mkdtempSync(join(tmpdir(), 'writer-base-'));
      outside = mkdtempSync(join(tmpdir(), 'writer-outside-'));
    });
    afterEach(() => {
      rmSync(base, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    });

    it('when the skill folder is a link to elsewhere, then nothing is written, there or through it', async () => {
      mkdirSync(join(base, 'skills'));
      symlinkSync(outside, join(base, 'skills', 'weather-report'));
      for (const replace of [false, true]) {
        const refused = await refusal(writeSkill(join(base, 'skills'), skill, { base, replace }));
        expect(refused).to.be.instanceOf(CliError).and.to.have.property('code', 'link_refused');
        expect((refused as Error).message).to.contain(`${join(base, 'skills', 'weather-report')} is a symbolic link`);
      }
      expect(readdirSync(outside)).to.deep.equal([]);
      expect(readdirSync(join(base, 'skills'))).to.deep.equal(['weather-report']);
    });

    it('when a folder on the way is a link, then nothing is written through it', async () => {
      symlinkSync(outside, join(base, '.agents'));
      const refused = await refusal(writeSkill(join(base, '.agents', 'skills'), skill, { base, replace: true }));
      expect(refused).to.be.instanceOf(CliError).and.to.have.property('code', 'link_refused');
      expect((refused as Error).message).to.contain(`${join(base, '.agents')} is a symbolic link (to ${outside})`);
      expect(readdirSync(outside)).to.deep.equal([]);
    });

    it('when a file stands on the way, then it is named', async () => {
      writeFileSync(join(base, 'skills'), 'a file');
      const refused = await refusal(writeSkill(join(base, 'skills'), skill, { base, replace: false }));
      expect(refused).to.be.instanceOf(CliError).and.to.have.property('code', 'target_not_a_folder');
      expect(readFileSync(join(base, 'skills'), 'utf8')).to.equal('a file');
    });

    it('when the skill folder exists, then it is kept as it is unless replacing was asked for', async () => {
      mkdirSync(join(base, 'weather-report'));
      writeFileSync(join(base, 'weather-report', 'SKILL.md'), 'mine');
      const refused = await refusal(writeSkill(base, skill, { base, replace: false, advice: 'pass --force' }));
      expect(refused).to.be.instanceOf(CliError).and.to.have.property('code', 'target_exists');
      expect((refused as Error).message).to.contain('pass --force');
      expect(readdirSync(base)).to.deep.equal(['weather-report']);
      expect(readdirSync(join(base, 'weather-report'))).to.deep.equal(['SKILL.md']);
      expect(readFileSync(join(base, 'weather-report', 'SKILL.md'), 'utf8')).to.equal('mine');

      await writeSkill(base, skill, { base, replace: true });
      expect(readdirSync(base)).to.deep.equal(['weather-report']);
      expect(readFileSync(join(base, 'weather-report', 'references/units.md'), 'utf8')).to.equal('new');
    });
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
