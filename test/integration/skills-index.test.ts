import { expect } from 'chai';
import { skillsIndexDocument, skillsIndexShardDocument } from '../../src/documents/skills/skills-index.document.js';
import { documentErrors } from '../../src/documents/validate.js';
import { fileDigest, skillDigest } from '@skill-market/skill-protocol/skill-digest';
import { registerAgent, type Agent } from '../support/agents.js';
import { signVersion } from '../support/skills.js';
import { eventually, startTestService, type TestService } from '../support/service.js';

const INDEX_KEY = '.well-known/agent-skills/index.json';

const skillFiles = (name: string, body = '# Weather\nRead the forecast, then write the report.\n') => [
  { path: 'SKILL.md', content: `---\nname: ${name}\ndescription: Writes a ${name} from a forecast.\n---\n${body}` },
  { path: 'references/units.md', content: 'Temperatures in Celsius.\n' },
];

interface IndexDoc {
  version: string;
  skills: Array<{
    name: string;
    id: string;
    digest: string;
    skillDigest: string;
    description: string;
    files: Array<{ path: string; digest: string }>;
    version: string;
    versionNumber: number;
    versionLabel: string;
    price: { amount: string; free: boolean };
    links: { preview: string; full: string };
    signature: unknown;
    seller: { walletAddress: string; handle: string };
    versions: Array<{ version: number; digest: string; signature: unknown }>;
  }>;
}

describe('the Agent Skills discovery index: /.well-known/agent-skills/index.json', function () {
  this.timeout(90_000);
  let svc: TestService;
  let seller: Agent;

  /** The index as the bucket holds it (what the edge serves), once it satisfies `ok`. */
  const publishedIndex = (ok: (doc: IndexDoc) => boolean) =>
    eventually(async () => {
      const object = await svc.service.runtime.store.get(INDEX_KEY);
      if (!object) return undefined;
      const doc = JSON.parse(object.body.toString('utf8')) as IndexDoc;
      return ok(doc) ? doc : undefined;
    }, 15_000);

  async function publish(name: string, price = '1500000'): Promise<string> {
    const res = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: `Skill ${name}`,
        preview: `Preview of ${name}.`,
        body: { files: skillFiles(name) },
        priceAtomic: price,
        version: '1.0.0',
      },
    });
    expect(res.status, await res.clone().text()).to.equal(201);
    const { id } = await res.json();
    expect((await seller.api(`/api/posts/${id}/publish`, { method: 'POST' })).status).to.equal(200);
    return id;
  }

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'index-seller');
  });
  after(async () => svc?.stop());

  it('when a seller publishes skills, then the workers publish an index listing each with its digests, price and links, valid against our schema', async () => {
    const weather = await publish('weather-report');
    const tides = await publish('tide-tables', '0');
    const doc = await publishedIndex((d) => d.skills.length === 2);
    expect(documentErrors(skillsIndexDocument, doc)).to.deep.equal([]);
    expect(doc.version).to.equal('0.2.0');
    const entry = doc.skills.find((s) => s.id === weather)!;
    const files = skillFiles('weather-report');
    expect(entry).to.deep.include({
      name: 'weather-report',
      description: 'Writes a weather-report from a forecast.',
      skillDigest: skillDigest(files),
      version: '1.0.0',
      versionNumber: 1,
      versionLabel: '1.0.0',
      signature: null,
    });
    expect(entry.files).to.deep.equal(files.map((f) => ({ path: f.path, digest: fileDigest(f.content) })));
    expect(entry.price).to.deep.include({ amount: '1500000', free: false });
    expect(entry.seller).to.deep.include({ handle: 'index-seller', walletAddress: seller.address });
    expect(entry.links.full).to.match(new RegExp(`/api/posts/${weather}\\?view=full$`));
    expect(doc.skills.find((s) => s.id === tides)?.price.free).to.equal(true);

    // The API answers the same path with the same listing (no edge in front, or before the first publish).
    const res = await fetch(`${svc.url}/${INDEX_KEY}`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.headers.get('cache-control')).to.equal(skillsIndexDocument.cacheControl);
    expect(((await res.json()) as IndexDoc).skills.map((s) => s.digest)).to.have.members(
      doc.skills.map((s) => s.digest),
    );
  });

  it('when a seller adds a version, then the index lists it as current, with every earlier version and its digest', async () => {
    const id = await publish('storm-warning');
    await publishedIndex((d) => d.skills.some((s) => s.id === id));
    const v2 = skillFiles('storm-warning', '# Storms\nVersion two warns earlier.\n');
    const res = await seller.api(`/api/posts/${id}/versions`, {
      method: 'POST',
      json: { body: { files: v2 }, version: '1.1.0' },
    });
    expect(res.status, await res.clone().text()).to.be.oneOf([200, 201]);
    const doc = await publishedIndex((d) => d.skills.find((s) => s.id === id)?.versionNumber === 2);
    const entry = doc.skills.find((s) => s.id === id)!;
    expect(entry.skillDigest).to.equal(skillDigest(v2));
    expect(entry.versionLabel).to.equal('1.1.0');
    expect(entry.versions.map((v) => [v.version, v.digest])).to.deep.equal([
      [2, skillDigest(v2)],
      [1, skillDigest(skillFiles('storm-warning'))],
    ]);
    expect(documentErrors(skillsIndexDocument, doc)).to.deep.equal([]);
  });

  it("when the seller signs a version, then the index carries the seller's signature of it", async () => {
    const id = await publish('sea-state');
    await publishedIndex((d) => d.skills.some((s) => s.id === id));
    const signature = await signVersion(seller.account, {
      postId: id,
      version: 1,
      name: 'sea-state',
      files: skillFiles('sea-state'),
    });
    const res = await seller.api(`/api/posts/${id}/versions/1/signature`, { method: 'POST', json: { signature } });
    expect(res.status, await res.clone().text()).to.be.oneOf([200, 201]);
    const doc = await publishedIndex((d) => d.skills.find((s) => s.id === id)?.signature !== null);
    const entry = doc.skills.find((s) => s.id === id)!;
    expect(entry.signature).to.deep.equal({ signer: seller.address, value: signature, scheme: 'eip712' });
    expect(entry.versions[0]).to.have.deep.property('signature', entry.signature);
    expect(documentErrors(skillsIndexDocument, doc)).to.deep.equal([]);
  });

  it('a publish of the index waits while another process holds its lock, and then lists what changed meanwhile', async () => {
    const { pool } = svc.service.runtime.database;
    const other = await pool.connect();
    const key = "hashtextextended('skills_index:index', 8004)";
    let held = true;
    try {
      await other.query(`SELECT pg_advisory_lock(${key})`);
      const first = await publish('hail-watch');
      // The worker's publish is waiting for the lock: nothing is put while another holds it.
      await eventually(async () => {
        const { rows } = await other.query(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
        );
        return rows[0].n > 0;
      }, 15_000);
      const second = await publish('frost-watch');
      const object = await svc.service.runtime.store.get(INDEX_KEY);
      const before = object ? (JSON.parse(object.body.toString('utf8')) as IndexDoc) : { skills: [] };
      expect(before.skills.map((s) => s.id)).to.not.include(first);
      await other.query(`SELECT pg_advisory_unlock(${key})`);
      held = false;
      const doc = await publishedIndex((d) => [first, second].every((id) => d.skills.some((s) => s.id === id)));
      expect(doc.skills.map((s) => s.name)).to.include.members(['hail-watch', 'frost-watch']);
    } finally {
      if (held) await other.query(`SELECT pg_advisory_unlock(${key})`).catch(() => undefined);
      other.release();
    }
  });

  it('when a seller unpublishes a skill, then the index no longer lists it', async () => {
    const id = await publish('fog-alert');
    await publishedIndex((d) => d.skills.some((s) => s.id === id));
    expect((await seller.api(`/api/posts/${id}/unpublish`, { method: 'POST' })).status).to.equal(200);
    const doc = await publishedIndex((d) => !d.skills.some((s) => s.id === id));
    expect(doc.skills.map((s) => s.name)).to.not.include('fog-alert');
  });

  it("a skill's shard is published to the bucket; the API's answer for it renders at most once per 30 s, whatever query strings a crawler sends", async () => {
    const id = await publish('gust-watch');
    const shard = id.slice(0, 2);
    const key = `.well-known/agent-skills/shards/${shard}.json`;
    const bucketed = await eventually(async () => {
      const object = await svc.service.runtime.store.get(key);
      const doc = object ? (JSON.parse(object.body.toString('utf8')) as IndexDoc & { shard: string }) : undefined;
      return doc?.skills.some((s) => s.id === id) ? doc : undefined;
    }, 15_000);
    expect(bucketed.shard).to.equal(shard);
    expect(bucketed.skills.every((s) => s.id.startsWith(shard))).to.equal(true);
    expect(documentErrors(skillsIndexShardDocument, bucketed)).to.deep.equal([]);
    // A query string gets past the edge to the API, which renders the shard from the database.
    const first = await fetch(`${svc.url}/.well-known/agent-skills/shards/${shard}.json?r=1`);
    expect(first.status).to.equal(200);
    const body = await first.text();
    expect(body).to.include(id);
    // A crawler varying the query string gets the same render, not a new one per request.
    const { pool } = svc.service.runtime.database;
    await pool.query(`UPDATE posts SET title = 'Renamed gust watch' WHERE id = $1`, [id]);
    const second = await fetch(`${svc.url}/.well-known/agent-skills/shards/${shard}.json?r=2`);
    expect(await second.text()).to.equal(body);
    expect((await fetch(`${svc.url}/.well-known/agent-skills/shards/zz.json`)).status).to.equal(400);
  });
});
