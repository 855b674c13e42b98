import { expect } from 'chai';
import pg from 'pg';
import { runOps } from '../../scripts/ops.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { agentDocumentKey } from '../../src/domain/agents/agent-documents.js';

describe('scripts/ops.ts: the runbook commands against a running service', function () {
  this.timeout(60_000);
  let svc: TestService;
  let pool: pg.Pool;
  let agent: Agent;
  const ops = (...args: string[]) => runOps({ pool, queues: svc.service.runtime.queues }, args);

  before(async () => {
    svc = await startTestService();
    pool = new pg.Pool({ connectionString: svc.database.url, max: 2 });
    agent = await registerAgent(svc, 'ops-agent');
  });
  after(async () => {
    await pool?.end();
    await svc?.stop();
  });

  it('republish brings back a document lost from the bucket', async () => {
    const key = agentDocumentKey(agent.handle, 'health.json');
    await eventually(async () => svc.service.runtime.store.get(key), 20_000, 100);
    await svc.service.runtime.store.delete(key);
    expect(await ops('republish', agent.handle)).to.match(
      /^enqueued agent-documents on queue documents as ops-agent-documents-\d+$/,
    );
    const back = await eventually(async () => svc.service.runtime.store.get(key), 20_000, 100);
    expect(JSON.parse(back.body.toString()).status).to.equal('dormant');
  });

  it('payment shows the row and what its state means; settle enqueues a resolution', async () => {
    const { rows } = await pool.query<{ id: string }>("SELECT id FROM payments WHERE purpose = 'registration'");
    const out = await ops('payment', rows[0]!.id);
    expect(out).to.contain('"status": "settled"').and.to.contain('settled: final');
    expect(await ops('settle', rows[0]!.id)).to.match(/^enqueued settle-payment on queue payments/);
  });

  it("a full recompute started by hand runs even right after another one (its own run, not the hour's)", async () => {
    await ops('enqueue', 'recompute-all');
    await new Promise((r) => setTimeout(r, 5));
    await ops('enqueue', 'recompute-all');
    const runs = await eventually(
      async () => {
        const jobs = await svc.service.runtime.queues.documents.getJobs([
          'completed',
          'waiting',
          'active',
          'delayed',
          'prioritized',
        ]);
        const ids = jobs
          .filter(
            (j) =>
              j?.name === 'agent-documents-batch' &&
              j.id?.includes('-allops-') &&
              (j.data as { agentIds: string[] }).agentIds.includes(agent.id),
          )
          .map((j) => j.id);
        return new Set(ids).size >= 2 ? ids : undefined;
      },
      20_000,
      100,
    );
    expect(runs.length).to.be.at.least(2);
  });

  it('refuses unknown commands, jobs, agents and payloads with a message', async () => {
    for (const [args, message] of [
      [['frobnicate', 'x'], /usage/],
      [['enqueue', 'no-such-job'], /unknown job "no-such-job"/],
      [['enqueue', 'agent-documents', '{"agentId":"nope"}'], /invalid payload for agent-documents/],
      [['enqueue', 'site-card', 'not json'], /must be JSON/],
      [['republish', 'nobody'], /no agent @nobody/],
      [['payment', '00000000-0000-0000-0000-000000000000'], /no payment/],
    ] as const) {
      const err = await ops(...args).catch((e: Error) => e);
      expect(err, args.join(' ')).to.be.instanceOf(Error);
      expect((err as Error).message).to.match(message);
    }
  });
});
