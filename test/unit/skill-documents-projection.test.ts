import { expect } from 'chai';
import { jobsFor } from '../../src/domain/events/dispatcher.js';
import { skillDocumentJobs } from '../../src/domain/projections/skill-documents.js';
import { FANOUT_JOB_OPTIONS } from '../../src/domain/webhooks/deliveries.use-cases.js';

const POST = '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6';
const OTHER = '0b7e3c1d-9a8f-4e6d-b5c4-a3b2c1d0e9f8';
const named = (name: string, jobs: ReturnType<typeof skillDocumentJobs>) => jobs.filter((j) => j.name === name);

describe('the skills index is published again when the skills it lists change', () => {
  const shards = (jobs: ReturnType<typeof skillDocumentJobs>) =>
    named('skills-index', jobs).flatMap((j) => (j.data.shard ? [j.data.shard] : []));
  const top = (jobs: ReturnType<typeof skillDocumentJobs>) => named('skills-index', jobs).filter((j) => !j.data.shard);

  it("a pass with changed skills asks for one publish of each changed skill's shard, and one of the index", () => {
    const jobs = skillDocumentJobs(
      { changed: [POST, OTHER, `${POST.slice(0, 2)}ffffff-0000-4000-8000-000000000000`], sold: [] },
      '900',
      1_000_000,
    );
    expect(shards(jobs).sort()).to.deep.equal(['0b', '5f']);
    expect(top(jobs)).to.have.length(1);
  });

  it('a pass with only sales asks for no shard, and for the index (its most bought) once in 5 s', () => {
    const at = (now: number) => named('skills-index', skillDocumentJobs({ changed: [], sold: [POST] }, '900', now));
    expect(shards(at(1_000_000))).to.deep.equal([]);
    const [first] = at(1_000_000);
    expect(first?.data).to.deep.equal({});
    expect(at(1_004_900)[0]?.jobId).to.equal(first?.jobId);
    expect(at(1_005_000)[0]?.jobId).to.not.equal(first?.jobId);
    expect(1_000_000 + (first?.delay ?? 0)).to.be.greaterThan(1_004_999);
  });

  it("a shard's changes within 250 ms are one publish, the index's within 2 s, each run after its window", () => {
    const at = (now: number, id = POST) =>
      named('skills-index', skillDocumentJobs({ changed: [id], sold: [] }, String(now), now));
    const [a, aTop] = at(1_000_010);
    const [b, bTop] = at(1_000_240);
    const [c, cTop] = at(1_000_260);
    expect(a?.jobId).to.equal(b?.jobId);
    expect(c?.jobId).to.not.equal(a?.jobId);
    expect(1_000_010 + (a?.delay ?? 0)).to.be.greaterThan(1_000_250);
    expect(aTop?.jobId).to.equal(bTop?.jobId).and.equal(cTop?.jobId);
    expect(at(1_002_000)[1]?.jobId).to.not.equal(aTop?.jobId);
    expect(1_000_010 + (aTop?.delay ?? 0)).to.be.greaterThan(1_002_000);
  });
});

describe("a skill's manifest and page are published again when it changes", () => {
  it('at once, as a job of this pass, so a job of an earlier pass still kept never swallows it', () => {
    const [first] = named('post-manifest', skillDocumentJobs({ changed: [POST], sold: [] }, '900', 1_000_000));
    const [later] = named('post-manifest', skillDocumentJobs({ changed: [POST], sold: [] }, '905', 1_000_001));
    expect(first).to.include({ name: 'post-manifest', queue: 'documents' });
    expect(first?.data).to.deep.equal({ postId: POST });
    expect(first?.delay).to.equal(undefined);
    expect(later?.jobId).to.not.equal(first?.jobId);
  });
});

describe("a skill's page is published again with its sales", () => {
  const pageJob = (now: number) =>
    named('post-manifest', skillDocumentJobs({ changed: [], sold: [POST] }, String(now), now))[0];

  it('the sales of one skill within 5 s are one publish, run after them', () => {
    const first = pageJob(1_000_000);
    const last = pageJob(1_004_900);
    expect(first?.jobId).to.be.a('string').and.equal(last?.jobId);
    expect(1_000_000 + (first?.delay ?? 0)).to.be.greaterThan(1_004_900);
    expect(first?.delay).to.be.at.most(5_020);
  });

  it('a sale in the next window is a publish of its own', () => {
    expect(pageJob(1_005_000)?.jobId).to.not.equal(pageJob(1_000_000)?.jobId);
  });
});

describe('the outbox asks for agent documents, and for the audit of a new version', () => {
  it("a skill's events recompute its seller's documents and nothing of the skill's own", () => {
    for (const type of ['post.published', 'post.updated', 'post.version_signed', 'purchase.settled']) {
      const jobs = jobsFor({ id: '1', type, agent_id: 'a', post_id: POST, payload: {} }, 1_000_000);
      expect(
        jobs.filter((j) => j.queue === 'documents').map((j) => j.name),
        type,
      ).to.deep.equal(['agent-documents']);
    }
  });

  it('a settled purchase also fans out to webhooks, once per event; a skill edit does not', () => {
    const sale = jobsFor({ id: '7', type: 'purchase.settled', agent_id: 'a', post_id: POST, payload: {} });
    expect(sale.filter((j) => j.queue === 'webhooks')).to.deep.equal([
      {
        queue: 'webhooks',
        name: 'webhook-fanout',
        data: { eventId: '7' },
        jobId: 'webhook-fanout-7',
        opts: FANOUT_JOB_OPTIONS,
      },
    ]);
    const edit = jobsFor({ id: '8', type: 'post.updated', agent_id: 'a', post_id: POST, payload: {} });
    expect(edit.filter((j) => j.queue === 'webhooks')).to.deep.equal([]);
  });

  it('a created skill audits its version 1, an added version that version, once per rules version', () => {
    const created = jobsFor({ id: '1', type: 'post.created', agent_id: 'a', post_id: POST, payload: {} });
    const added = jobsFor({
      id: '2',
      type: 'post.version_added',
      agent_id: 'a',
      post_id: POST,
      payload: { version: 3 },
    });
    const audit = (jobs: typeof created) => jobs.find((j) => j.name === 'skill-audit');
    expect(audit(created)?.data).to.deep.equal({ postId: POST, version: 1 });
    expect(audit(added)?.data).to.deep.equal({ postId: POST, version: 3 });
    expect(audit(added)?.jobId).to.match(new RegExp(`^skill-audit-${POST}-3-r\\d+$`));
  });
});
