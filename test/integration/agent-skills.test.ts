import { expect } from 'chai';
import { getAddress, recoverTypedDataAddress, type Hex } from 'viem';
import { startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { signVersion, skillMd } from '../support/skills.js';
import { fileDigest, skillDigest } from '@skill-market/skill-protocol/skill-digest';

const FILES = [
  {
    path: 'SKILL.md',
    content: skillMd('weather-report', { body: '# Weather report\nRead scripts/fetch.py first.\n' }),
  },
  { path: 'scripts/fetch.py', content: 'print("sunny")\n' },
  { path: 'references/units.md', content: '°C, not °F — ünïcode kept as UTF-8.\n' },
];

describe('Agent Skills: the format at publish, digests and the seller signature in the full view', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let other: Agent;
  const db = () => svc.service.runtime.database.db;
  const count = async (table: 'posts' | 'post_versions') =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const create = (json: Record<string, unknown>) =>
    seller.api('/api/posts', {
      method: 'POST',
      json: { title: 'Weather report', preview: 'Writes a weather report.', priceAtomic: '0', ...json },
    });

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'skill-signer');
    other = await registerAgent(svc, 'other-wallet');
  });
  after(async () => svc?.stop());

  it('a valid skill is stored with its digests; the full view states them and they match the files', async () => {
    const res = await create({ body: { files: FILES }, version: '1.0.0' });
    expect(res.status).to.equal(201);
    const full = await res.json();
    expect(full.integrity).to.deep.equal({
      name: 'weather-report',
      version: 1,
      versionLabel: '1.0.0',
      skillDigest: skillDigest(FILES),
      files: [
        { path: 'SKILL.md', digest: fileDigest(FILES[0]!.content) },
        { path: 'references/units.md', digest: fileDigest(FILES[2]!.content) },
        { path: 'scripts/fetch.py', digest: fileDigest(FILES[1]!.content) },
      ],
      signature: null,
    });
    expect(full.author.walletAddress).to.equal(getAddress(seller.address));
  });

  it('the seller signs at publish; the full view carries a signature that recovers to the seller wallet offline', async () => {
    const files = [{ path: 'SKILL.md', content: skillMd('tide-tables') }];
    const { id } = await (await create({ title: 'Tide tables', body: { files } })).json();
    const signature = await signVersion(seller.account, { postId: id, version: 1, name: 'tide-tables', files });
    const published = await seller.api(`/api/posts/${id}/publish`, {
      method: 'POST',
      json: { versionSignature: signature },
    });
    expect(published.status).to.equal(200);
    // A free post: anyone reads its full view, and checks it with nothing but the response.
    const full = await (await fetch(`${svc.url}/api/posts/${id}?view=full`)).json();
    const sig = full.integrity.signature;
    expect(sig).to.include({ signer: getAddress(seller.address), value: signature.toLowerCase(), scheme: 'eip712' });
    expect(sig.typedData.message).to.deep.equal({
      postId: id,
      version: '1',
      name: 'tide-tables',
      digest: skillDigest(files),
    });
    const { domain, types, primaryType, message } = sig.typedData;
    const recovered = await recoverTypedDataAddress({
      domain,
      types,
      primaryType,
      message: { ...message, version: BigInt(message.version) },
      signature: sig.value as Hex,
    });
    expect(recovered).to.equal(full.author.walletAddress);
    expect(skillDigest(full.files)).to.equal(full.integrity.skillDigest);
  });

  it('a signature by another wallet is 422 version_signature_invalid and nothing is published or stored', async () => {
    const files = [{ path: 'SKILL.md', content: skillMd('forged-skill') }];
    const { id } = await (await create({ title: 'Forged', body: { files } })).json();
    const forged = await signVersion(other.account, { postId: id, version: 1, name: 'forged-skill', files });
    const res = await seller.api(`/api/posts/${id}/publish`, { method: 'POST', json: { versionSignature: forged } });
    expect(res.status).to.equal(422);
    const problem = await res.json();
    expect(problem.code).to.equal('version_signature_invalid');
    const row = await db()
      .selectFrom('posts')
      .innerJoin('post_versions', 'post_versions.post_id', 'posts.id')
      .select(['posts.status', 'post_versions.signature'])
      .where('posts.id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).to.deep.equal({ status: 'draft', signature: null });
  });

  it('a signature over other content (another digest or version) is refused the same way', async () => {
    const files = [{ path: 'SKILL.md', content: skillMd('wrong-digest') }];
    const { id } = await (await create({ title: 'Wrong digest', body: { files } })).json();
    const wrongDigest = await signVersion(seller.account, {
      postId: id,
      version: 1,
      name: 'wrong-digest',
      files: FILES,
    });
    const wrongVersion = await signVersion(seller.account, { postId: id, version: 2, name: 'wrong-digest', files });
    for (const versionSignature of [wrongDigest, wrongVersion]) {
      const res = await seller.api(`/api/posts/${id}/publish`, { method: 'POST', json: { versionSignature } });
      expect(res.status).to.equal(422);
      expect((await res.json()).code).to.equal('version_signature_invalid');
    }
  });

  it('a version published unsigned is signed later through its signature route, once', async () => {
    const files = [{ path: 'SKILL.md', content: skillMd('late-signer') }];
    const { id } = await (await create({ title: 'Late signer', body: { files } })).json();
    await seller.api(`/api/posts/${id}/publish`, { method: 'POST' });
    const url = `/api/posts/${id}/versions/1/signature`;
    const forged = await signVersion(other.account, { postId: id, version: 1, name: 'late-signer', files });
    const bad = await seller.api(url, { method: 'POST', json: { signature: forged } });
    expect(bad.status).to.equal(422);
    expect((await bad.json()).code).to.equal('version_signature_invalid');
    expect((await other.api(url, { method: 'POST', json: { signature: forged } })).status).to.equal(403);

    const signature = await signVersion(seller.account, { postId: id, version: 1, name: 'late-signer', files });
    const ok = await seller.api(url, { method: 'POST', json: { signature } });
    expect(ok.status).to.equal(200);
    const integrity = await ok.json();
    expect(integrity.signature).to.include({ signer: getAddress(seller.address), value: signature.toLowerCase() });
    expect((await seller.api(url, { method: 'POST', json: { signature } })).status, 'the same again').to.equal(200);

    // Another valid-looking signature of the seller (over other content) never replaces it.
    const again = await signVersion(seller.account, { postId: id, version: 1, name: 'late-signer', files: FILES });
    expect((await seller.api(url, { method: 'POST', json: { signature: again } })).status).to.equal(422);
    expect(
      (await seller.api(`/api/posts/${id}/versions/9/signature`, { method: 'POST', json: { signature } })).status,
    ).to.equal(404);
    const full = await (await fetch(`${svc.url}/api/posts/${id}?view=full`)).json();
    expect(full.integrity.signature.value).to.equal(signature.toLowerCase());
  });

  it('a new version keeps the name, may be signed as it is added, and has its own digest', async () => {
    const v1 = [{ path: 'SKILL.md', content: skillMd('snow-report') }];
    const { id } = await (await create({ title: 'Snow report', body: { files: v1 } })).json();
    await seller.api(`/api/posts/${id}/publish`, { method: 'POST' });
    const renamed = await seller.api(`/api/posts/${id}/versions`, {
      method: 'POST',
      json: { body: { files: [{ path: 'SKILL.md', content: skillMd('ice-report') }] }, version: '2.0.0' },
    });
    expect(renamed.status).to.equal(422);
    const problem = await renamed.json();
    expect(problem.code).to.equal('agent_skill_invalid');
    expect(problem.errors).to.deep.equal([
      {
        field: 'frontmatter.name',
        rule: 'unchanged',
        message: 'this skill is named "snow-report"; every version keeps that name',
      },
    ]);

    const v2 = [
      { path: 'SKILL.md', content: skillMd('snow-report', { body: '# Snow report, with avalanche levels\n' }) },
    ];
    const versionSignature = await signVersion(seller.account, {
      postId: id,
      version: 2,
      name: 'snow-report',
      files: v2,
    });
    const res = await seller.api(`/api/posts/${id}/versions`, {
      method: 'POST',
      json: { body: { files: v2 }, version: '2.0.0', versionSignature },
    });
    expect(res.status).to.equal(201);
    const full = await res.json();
    expect(full.integrity).to.include({
      name: 'snow-report',
      version: 2,
      versionLabel: '2.0.0',
      skillDigest: skillDigest(v2),
    });
    expect(full.integrity.signature.signer).to.equal(getAddress(seller.address));
    expect(skillDigest(v2)).to.not.equal(skillDigest(v1));
  });

  it('the same SKILL.md name twice for one author is 409 skill_name_taken; another author may use it', async () => {
    const files = [{ path: 'SKILL.md', content: skillMd('weather-report') }];
    const before = await count('posts');
    const res = await create({ title: 'Weather again', body: { files } });
    expect(res.status).to.equal(409);
    expect((await res.json()).code).to.equal('skill_name_taken');
    expect(await count('posts')).to.equal(before);
    const theirs = await other.api('/api/posts', {
      method: 'POST',
      json: { title: 'Their weather', preview: 'p', body: { files } },
    });
    expect(theirs.status).to.equal(201);
  });

  it('a stored version cannot be changed, not even by SQL: its content, digests and signature are immutable', async () => {
    const row = await db().selectFrom('post_versions').select(['post_id', 'version']).executeTakeFirstOrThrow();
    for (const change of [
      { body: JSON.stringify({ files: [{ path: 'SKILL.md', content: 'swapped' }] }) },
      { skill_digest: `sha256:${'0'.repeat(64)}` },
      { version_label: '9.9.9' },
    ]) {
      let refused = false;
      try {
        await db()
          .updateTable('post_versions')
          .set(change)
          .where('post_id', '=', row.post_id)
          .where('version', '=', row.version)
          .execute();
      } catch {
        refused = true;
      }
      expect(refused, JSON.stringify(change)).to.equal(true);
    }
  });
});
