import { expect } from 'chai';
import { jobsFor } from '../../src/domain/events/dispatcher.js';

const POST = '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6';
const event = (type: string, id = '1') => ({ id, type, agent_id: null, post_id: POST });
const indexJobs = (type: string, now: number, id?: string) =>
  jobsFor(event(type, id), now).filter((j) => j.name === 'skills-index');

describe('the discovery index is published again when the skills it lists change', () => {
  it('publishing, changing, unpublishing, adding or signing a version asks for one publish of the index', () => {
    for (const type of [
      'post.published',
      'post.updated',
      'post.unpublished',
      'post.version_added',
      'post.version_signed',
    ])
      expect(indexJobs(type, 1_000_000), type).to.have.length(1);
  });

  it('a draft being created or a sale does not', () => {
    expect(indexJobs('post.created', 1_000_000)).to.deep.equal([]);
    expect(
      jobsFor({ id: '1', type: 'purchase.settled', agent_id: 'a', post_id: null }, 1_000_000).map((j) => j.name),
    ).to.not.include('skills-index');
  });

  it('a burst of changes within 250 ms is one job, run after the burst', () => {
    const [a] = indexJobs('post.published', 1_000_010, '1');
    const [b] = indexJobs('post.version_added', 1_000_240, '2');
    const [c] = indexJobs('post.updated', 1_000_260, '3');
    expect(a?.jobId).to.equal(b?.jobId);
    expect(c?.jobId).to.not.equal(a?.jobId);
    expect(1_000_010 + (a?.delay ?? 0)).to.be.greaterThan(1_000_250);
  });
});

describe("a skill's page is published again with its sales", () => {
  const pageJobs = (now: number, id: string) =>
    jobsFor({ id, type: 'purchase.settled', agent_id: 'a', post_id: POST }, now).filter(
      (j) => j.name === 'post-manifest',
    );

  it('the sales of one skill within 5 s are one publish, run after them', () => {
    const [first] = pageJobs(1_000_000, '1');
    const [last] = pageJobs(1_004_900, '2');
    expect(first?.jobId).to.be.a('string').and.equal(last?.jobId);
    expect(1_000_000 + (first?.delay ?? 0)).to.be.greaterThan(1_004_900);
    expect(first?.delay).to.be.at.most(5_020);
  });

  it('a sale in the next window is a publish of its own', () => {
    const [first] = pageJobs(1_000_000, '1');
    const [next] = pageJobs(1_005_000, '2');
    expect(next?.jobId).to.not.equal(first?.jobId);
  });
});
