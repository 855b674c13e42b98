import { expect } from 'chai';
import {
  AgentSkillInvalidError,
  parseSkillMd,
  unsafePathRule,
  validateAgentSkill,
} from '../../src/domain/skills/agent-skill.js';

const md = (front: string, body = '# Body\n') => `---\n${front}\n---\n${body}`;
const rules = (text: string) => parseSkillMd(text).problems.map((p) => `${p.field}:${p.rule}`);

function refusal(files: { path: string; content: string }[]): AgentSkillInvalidError {
  try {
    validateAgentSkill(files);
  } catch (err) {
    if (err instanceof AgentSkillInvalidError) return err;
    throw err;
  }
  throw new Error('the files were accepted');
}

describe('Agent Skill format (agentskills.io specification)', () => {
  it('reads a valid SKILL.md with every optional field', () => {
    const { manifest, problems } = parseSkillMd(
      md(
        'name: pdf-processing\ndescription: Extract text and tables from PDF files.\nlicense: Apache-2.0\n' +
          'compatibility: Needs poppler-utils\nmetadata:\n  author: example-org\n  version: "1.0"\nallowed-tools: Bash(git:*) Read',
      ),
    );
    expect(problems).to.deep.equal([]);
    expect(manifest).to.deep.equal({
      name: 'pdf-processing',
      description: 'Extract text and tables from PDF files.',
      license: 'Apache-2.0',
      compatibility: 'Needs poppler-utils',
      metadata: { author: 'example-org', version: '1.0' },
      allowedTools: 'Bash(git:*) Read',
    });
  });

  it('accepts CRLF line ends and a name of exactly 64 characters', () => {
    const name = `a${'-b'.repeat(31)}a`.slice(0, 64);
    expect(name).to.have.length(64);
    expect(parseSkillMd(`---\r\nname: ${name}\r\ndescription: d\r\n---\r\nbody`).problems).to.deep.equal([]);
  });

  it('malformed frontmatter gets a rule each: missing, unterminated, not YAML, duplicate key, not a mapping', () => {
    expect(rules('# No frontmatter')).to.deep.equal(['SKILL.md:frontmatter_required']);
    expect(rules('---\nname: x\ndescription: y\n# never closed')).to.deep.equal(['SKILL.md:frontmatter_unterminated']);
    expect(rules(md('name: [unclosed\ndescription: y'))).to.include('SKILL.md:yaml_syntax');
    expect(rules(md('name: a\nname: b\ndescription: y'))).to.deep.equal(['SKILL.md:duplicate_key']);
    expect(rules(md('- name\n- description'))).to.deep.equal(['SKILL.md:frontmatter_mapping']);
  });

  it('names each field and rule that is broken, all at once', () => {
    expect(
      rules(
        md(
          `name: PDF--Tools\ndescription: ""\ncompatibility: ${'x'.repeat(501)}\nmetadata:\n  version: 1.0\nallowed-tools: [Read]\nmodel: opus`,
        ),
      ),
    ).to.deep.equal([
      'frontmatter.model:unknown_field',
      'frontmatter.name:pattern',
      'frontmatter.description:length',
      'frontmatter.compatibility:length',
      'frontmatter.metadata.version:type',
      'frontmatter.allowed-tools:type',
    ]);
  });

  it('name: required, a string, 1 to 64 characters, no leading, trailing or double hyphen', () => {
    expect(rules(md('description: d'))).to.deep.equal(['frontmatter.name:required']);
    expect(rules(md('name: 12\ndescription: d'))).to.deep.equal(['frontmatter.name:type']);
    expect(rules(md(`name: ${'a'.repeat(65)}\ndescription: d`))).to.deep.equal(['frontmatter.name:length']);
    for (const bad of ['-pdf', 'pdf-', 'pdf--x', 'Pdf', 'pdf_x', 'pdf x', 'pdf.x'])
      expect(rules(md(`name: "${bad}"\ndescription: d`)), bad).to.deep.equal(['frontmatter.name:pattern']);
  });

  it('description: required, 1 to 1024 characters', () => {
    expect(rules(md('name: a'))).to.deep.equal(['frontmatter.description:required']);
    expect(rules(md(`name: a\ndescription: ${'d'.repeat(1025)}`))).to.deep.equal(['frontmatter.description:length']);
    expect(rules(md(`name: a\ndescription: ${'d'.repeat(1024)}`))).to.deep.equal([]);
  });

  it('path traversal and names read differently elsewhere are refused with a rule each', () => {
    const cases: Record<string, string> = {
      '../escape.md': 'path_traversal',
      'scripts/../../x': 'path_traversal',
      '..': 'path_traversal',
      '/etc/passwd': 'absolute_path',
      'C:/Windows/x': 'absolute_path',
      'scripts\\run.ps1': 'backslash',
      './SKILL.md': 'dot_segment',
      'scripts/./run.sh': 'dot_segment',
      'scripts//run.sh': 'empty_segment',
      'scripts/': 'empty_segment',
      'a\u0000b': 'control_character',
      'a\nb': 'control_character',
      'stream:hidden': 'colon',
      'references/café.md': 'not_portable',
      'references/notes #1.md': 'not_portable',
      'assets/[draft].png': 'not_portable',
    };
    for (const [path, rule] of Object.entries(cases)) expect(unsafePathRule(path)?.rule, path).to.equal(rule);
    for (const ok of ['SKILL.md', 'scripts/run.sh', 'references/Read me (v2).md', 'assets/.env.example', 'a..b.md'])
      expect(unsafePathRule(ok), ok).to.equal(undefined);
  });

  it('unsafe paths come first (file_path_unsafe), then binary content (file_not_text), then the skill (agent_skill_invalid)', () => {
    const skill = { path: 'SKILL.md', content: md('name: a\ndescription: d') };
    const paths = refusal([skill, { path: '../x', content: 'x' }, { path: 'ok.md', content: '\u0001' }]);
    expect(paths.status).to.equal(422);
    expect(paths.code).to.equal('file_path_unsafe');
    expect(paths.errors).to.deep.equal([
      { field: 'body.files[1].path', rule: 'path_traversal', message: 'a ".." segment leaves the skill folder' },
    ]);
    const binary = refusal([skill, { path: 'assets/logo.png', content: '\u0089PNG\r\n\u001a\n\u0000' }]);
    expect(binary.code).to.equal('file_not_text');
    expect(binary.errors[0]).to.include({ field: 'body.files[1].content', rule: 'not_text' });
    const missing = refusal([{ path: 'README.md', content: '# hi' }]);
    expect(missing.code).to.equal('agent_skill_invalid');
    expect(missing.errors).to.deep.equal([
      { field: 'SKILL.md', rule: 'required', message: 'an Agent Skill has a SKILL.md at the top of its folder' },
    ]);
    expect(refusal([{ path: 'skill.md', content: md('name: a\ndescription: d') }]).code).to.equal(
      'agent_skill_invalid',
    );
    expect(validateAgentSkill([skill, { path: 'notes.txt', content: 'tab\tand\r\nform\ffeed' }]).name).to.equal('a');
  });

  it('paths that cannot all be written side by side: a file that is also a folder, names equal but for case', () => {
    const skill = { path: 'SKILL.md', content: md('name: a\ndescription: d') };
    const folder = refusal([skill, { path: 'scripts', content: 'x' }, { path: 'scripts/run.sh', content: 'x' }]);
    expect(folder.errors.map((e) => `${e.field}:${e.rule}`)).to.deep.equal(['body.files[2].path:file_and_folder']);
    const cased = refusal([skill, { path: 'skill.md', content: 'x' }]);
    expect(cased.code).to.equal('file_path_unsafe');
    expect(cased.errors.map((e) => `${e.field}:${e.rule}`)).to.deep.equal(['body.files[1].path:case_collision']);
  });
});
