import { expect } from 'chai';
import { jobContext } from '../../src/bootstrap/service.js';
import { jobsFor } from '../../src/domain/events/dispatcher.js';
import type { DomainEventRow } from '../../src/data/events.repository.js';
import { addPlannedJobs } from '../../src/platform/queues.js';
import { registerAgent } from '../support/agents.js';
import { eventually, startTestService, type TestService } from '../support/service.js';

/**
 * The documents queue holds the jobs events ask for (a sale's seller documents, an edit's) and
 * bulk work queued by the thousand (a full recompute's pages, a re-audit of every version). The
 * bulk work is queued as background jobs, so an event's job does not wait behind it.
 */
describe('background jobs wait for the jobs events ask for', function () {
  this.timeout(120_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ WORKER_CONCURRENCY: '1' });
  });
  after(async () => svc?.stop());

  it("a sale's documents are taken before the full recompute's pages queued ahead of them", async () => {
    const seller = await registerAgent(svc, 'busy-seller');
    const queue = svc.service.runtime.queues.documents;
    const pending = async (...states: Array<'wait' | 'delayed' | 'active' | 'prioritized'>) =>
      Object.values(await queue.getJobCounts(...states)).reduce((a, b) => a + b, 0);
    // Let the registration's own jobs finish first.
    await eventually(
      async () => (await pending('wait', 'delayed', 'active', 'prioritized')) === 0 || undefined,
      30_000,
    );
    // 300 pages of a full recompute, as the recompute-all job queues them (pages of agents that do not exist).
    const pages = Array.from({ length: 300 }, (_, i) => ({
      name: 'agent-documents-batch',
      data: { agentIds: [`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`], featuresFresh: true },
      jobId: `page-${i}`,
    }));
    // Both queued while the queue is paused, so the worker finds them queued together.
    const sale = { type: 'purchase.settled', agent_id: seller.id, post_id: null } as unknown as DomainEventRow;
    const planned = jobsFor(sale).filter((j) => j.name === 'agent-documents');
    expect(planned).to.have.length(1);
    const saleJob = planned[0]!.jobId;
    await queue.pause();
    try {
      await jobContext(svc.service.runtime).enqueueDocuments(pages, { background: true });
      // Then a sale: the dispatcher's job for its purchase.settled event, after its coalescing delay.
      await addPlannedJobs(svc.service.runtime.queues, planned);
      const queued = await queue.getJob(saleJob);
      await eventually(
        async () => Date.now() > (queued?.timestamp ?? 0) + (queued?.delay ?? 0) || undefined,
        5_000,
        20,
      );
    } finally {
      await queue.resume();
    }
    const saleStarted = await eventually(async () => (await queue.getJob(saleJob))?.processedOn, 60_000);
    // And the pages still all run, after it.
    await eventually(async () => (await pending('prioritized', 'wait', 'active')) === 0 || undefined, 60_000);
    const started = await Promise.all(pages.map(async (p) => (await queue.getJob(p.jobId))?.processedOn));
    expect(started.every((at) => at !== undefined)).to.equal(true);
    // In the queue's order it would have come after all 300; one worker slot takes it first.
    expect(started.filter((at) => at! < saleStarted).length).to.equal(0);
  });
});
