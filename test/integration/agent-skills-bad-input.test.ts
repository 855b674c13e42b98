import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { skillMd } from '../support/skills.js';

type File = { path: string; content: string };

describe('Agent Skills: bad files are refused with a stable code, and nothing is written', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let postId: string;
  const skill = { path: 'SKILL.md', content: skillMd('bad-input-target') };

  const counts = async () => {
    const db = svc.service.runtime.database.db;
    const n = async (table: 'posts' | 'post_versions' | 'domain_events') =>
      Number(
        (
          await db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    return { posts: await n('posts'), versions: await n('post_versions'), events: await n('domain_events') };
  };
  const create = (files: File[]) =>
    seller.api('/api/posts', { method: 'POST', json: { title: 'Bad input', preview: 'p', body: { files } } });
  const addVersion = (files: File[]) =>
    seller.api(`/api/posts/${postId}/versions`, { method: 'POST', json: { body: { files }, version: '2.0.0' } });

  /** Both ways in (a new skill, a new version) refuse the files with this status and code, writing nothing. */
  async function refused(files: File[], status: number, code: string) {
    const before = await counts();
    const answers = [await create(files), await addVersion(files)];
    for (const res of answers) {
      expect(res.status, JSON.stringify(files).slice(0, 120)).to.equal(status);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const problem = await res.json();
      expect(problem.code).to.equal(code);
      if (status === 422) {
        expect(problem.errors).to.be.an('array').that.is.not.empty;
        for (const e of problem.errors) expect(Object.keys(e).sort()).to.deep.equal(['field', 'message', 'rule']);
      }
      problemList.push(problem);
    }
    expect(await counts()).to.deep.equal(before);
    return problemList.splice(0);
  }
  const problemList: Array<{ code: string; errors: { field: string; rule: string; message: string }[] }> = [];

  before(async () => {
    svc = await startTestService({ RATE_LIMITS: 'off' });
    seller = await registerAgent(svc, 'bad-input-seller');
    const res = await create([skill]);
    expect(res.status).to.equal(201);
    postId = (await res.json()).id;
  });
  after(async () => svc?.stop());

  it('malformed frontmatter: 422 agent_skill_invalid naming each field and rule', async () => {
    const [first] = await refused(
      [{ path: 'SKILL.md', content: '---\nname: Bad Name\ndescription:\nversion: 2\n---\n# x' }],
      422,
      'agent_skill_invalid',
    );
    expect(first!.errors.map((e) => `${e.field}:${e.rule}`)).to.deep.equal([
      'frontmatter.version:unknown_field',
      'frontmatter.name:pattern',
      'frontmatter.description:required',
    ]);
    await refused([{ path: 'SKILL.md', content: '# no frontmatter at all' }], 422, 'agent_skill_invalid');
    await refused([{ path: 'SKILL.md', content: '---\nname: [x\n---\n' }], 422, 'agent_skill_invalid');
    await refused([{ path: 'README.md', content: skillMd('bad-input-target') }], 422, 'agent_skill_invalid');
  });

  it('path traversal, absolute paths, backslashes and "." segments: 422 file_path_unsafe', async () => {
    for (const [path, rule] of [
      ['../outside.md', 'path_traversal'],
      ['scripts/../../etc/cron.d/x', 'path_traversal'],
      ['/etc/passwd', 'absolute_path'],
      ['C:/Users/x/run.ps1', 'absolute_path'],
      ['scripts\\..\\..\\x', 'backslash'],
      ['./SKILL.md', 'dot_segment'],
      ['scripts//run.sh', 'empty_segment'],
      ['scripts/run\u0007.sh', 'control_character'],
      ['SKILL.md/inner.md', 'file_and_folder'],
      ['skill.md', 'case_collision'],
      // What the discovery index and an installer refuse is refused here too, before anyone pays.
      ['references/café #1.md', 'not_portable'],
    ] as const) {
      const [problem] = await refused([skill, { path, content: 'x' }], 422, 'file_path_unsafe');
      expect(problem!.errors).to.have.length(1);
      expect(problem!.errors[0]!.field, path).to.equal('body.files[1].path');
      expect(problem!.errors[0]!.rule, path).to.equal(rule);
    }
  });

  it('binary where text is required: 422 file_not_text; a NUL anywhere: 400 invalid_request', async () => {
    const [problem] = await refused(
      [skill, { path: 'assets/logo.png', content: '\u0089PNG\r\n\u001a\n\u0002\u0003' }],
      422,
      'file_not_text',
    );
    expect(problem!.errors[0]).to.include({ field: 'body.files[1].content', rule: 'not_text' });
    await refused([skill, { path: 'assets/blob.bin', content: 'a\u0000b' }], 400, 'invalid_request');
  });

  it('too many files (over 50): 400 invalid_request naming body.files; over 200,000 bytes: 413 post_body_too_large', async () => {
    const many = [skill, ...Array.from({ length: 50 }, (_, i) => ({ path: `references/${i}.md`, content: 'x' }))];
    const [problem] = await refused(many, 400, 'invalid_request');
    expect((problem as unknown as { invalidParams: { name: string }[] }).invalidParams[0]!.name).to.match(
      /^body\.files/,
    );
    await refused([skill, { path: 'references/big.md', content: 'x'.repeat(200_001) }], 413, 'post_body_too_large');
  });

  it('duplicate paths: 400; the post keeps its one version and its name', async () => {
    await refused([skill, skill], 400, 'invalid_request');
    const full = await (await seller.api(`/api/posts/${postId}?view=full`)).json();
    expect(full.version).to.equal(1);
    expect(full.integrity.name).to.equal('bad-input-target');
  });
});
