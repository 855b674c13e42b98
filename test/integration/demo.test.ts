import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { runDemo, type DemoResult } from '../../scripts/demo/marketplace.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { eventually, startTestService, type TestService } from '../support/service.js';

describe('npm run demo: a simulated marketplace through the public API', function () {
  this.timeout(120_000);
  let svc: TestService;
  let demo: DemoResult;
  const phases: string[] = [];
  let steps = 0;

  before(async () => {
    svc = await startTestService();
    demo = await runDemo({
      baseUrl: svc.url,
      agents: 7,
      purchases: 14,
      tradingSeconds: 0,
      onPhase: (phase) => phases.push(phase),
      onStep: () => steps++,
    });
  });
  after(() => svc?.stop());

  it('registers every agent by paying, publishes skills and settles purchases, with no failed step', () => {
    expect(demo.failures).to.deep.equal([]);
    expect(phases).to.deep.equal(['registering', 'publishing', 'trading']);
    expect(demo.agents).to.have.length(7);
    expect(demo.skills.length).to.be.greaterThan(6);
    expect(demo.purchases).to.have.length(14);
    expect(steps).to.equal(7 + demo.agents.filter((a) => a.activity > 0).length + 14);
    // Paid purchases carry an on-chain settlement transaction.
    for (const p of demo.purchases.filter((x) => x.paid)) expect(p.transaction).to.match(/^0x[0-9a-f]{64}$/);
  });

  it('the ledger holds exactly the registrations and paid purchases the demo made', async () => {
    const { rows } = await svc.service.runtime.database.pool.query<{ kind: string; n: number }>(
      "SELECT purpose AS kind, count(*)::int AS n FROM payments WHERE status = 'settled' GROUP BY purpose",
    );
    const byKind = Object.fromEntries(rows.map((r) => [r.kind, r.n]));
    expect(byKind.registration).to.equal(7);
    expect(byKind.purchase ?? 0).to.equal(demo.purchases.filter((p) => p.paid).length);
  });

  it('fills the feeds, trending and per-agent documents a newcomer is pointed at', async () => {
    const sellers = new Set(
      demo.purchases.filter((p) => p.paid).map((p) => demo.skills.find((s) => s.id === p.skillId)!.seller),
    );
    // Rankings are population-wide: the scheduler refreshes them (POPULATION_CRON); run it now.
    await svc.service.runtime.queues.documents.add(populationStatsJob.name, {}, { jobId: 'demo-test-rankings' });
    const trending = await eventually(
      async () => {
        const body = await (await fetch(`${svc.url}/api/discovery/trending.json`)).json();
        return body.agents?.length === sellers.size ? body : undefined;
      },
      30_000,
      250,
    );
    expect(new Set(trending.agents.map((a: { handle: string }) => a.handle))).to.deep.equal(sellers);

    // The feed indexer assigns feed times just behind the commit watermark, so allow it a moment.
    // Every skill is listed, the bad ones too, each with its audit: the bad ones fail it.
    const listed = [...demo.skills, ...demo.flagged].map((s) => s.id).sort();
    expect(demo.flagged).to.have.length.greaterThan(0);
    const feed = await eventually(
      async () => {
        const body = await (await fetch(`${svc.url}/api/discovery/posts.json?limit=200`)).json();
        const audited = body.items.filter((i: { audit?: string }) => i.audit && i.audit !== 'pending');
        return body.items.length === listed.length && audited.length === listed.length ? body : undefined;
      },
      30_000,
      250,
    );
    expect(feed.items.map((i: { id: string }) => i.id).sort()).to.deep.equal(listed);
    const verdicts = new Map(feed.items.map((i: { id: string; audit: string }) => [i.id, i.audit]));
    for (const f of demo.flagged) expect(verdicts.get(f.id), f.title).to.equal('fail');
    for (const s of demo.skills) expect(verdicts.get(s.id), s.title).to.not.equal('fail');

    const top = trending.agents[0].handle as string;
    const score = await eventually(
      async () => {
        const res = await fetch(`${svc.url}/api/agents/${top}/score.json`);
        const body = res.status === 200 ? await res.json() : undefined;
        return body?.inputs?.uniqueBuyers90d > 0 ? body : undefined;
      },
      30_000,
      250,
    );
    expect(score.score.score).to.be.greaterThan(0);
    const badge = await (await fetch(`${svc.url}/api/agents/${top}/badge.svg`)).text();
    expect(badge).to.match(/^<svg/).and.to.contain('USDC');

    // The agents that went quiet after registering are dormant.
    const quiet = demo.agents.find((a) => a.activity === 0)!;
    const health = await eventually(
      async () => {
        const res = await fetch(`${svc.url}/api/agents/${quiet.handle}/health.json`);
        return res.status === 200 ? res.json() : undefined;
      },
      30_000,
      250,
    );
    expect(health.status).to.equal('dormant');
  });
});

describe('npm run demo: ERC-8004 identities', function () {
  this.timeout(120_000);
  let svc: TestService;
  let demo: DemoResult;

  before(async () => {
    svc = await startTestService();
    demo = await runDemo({ baseUrl: svc.url, agents: 4, purchases: 2, tradingSeconds: 0 });
  });
  after(() => svc?.stop());

  it('every third agent mints one: its identity document resolves, it is verified and its checklist item passes', async () => {
    expect(demo.failures).to.deep.equal([]);
    const minted = demo.agents.filter((a) => a.erc8004AgentId !== undefined);
    expect(minted.map((a) => a.handle).sort()).to.deep.equal(
      demo.agents
        .filter((a) => /^(pdf-wrangler|ops-pilot)-/.test(a.handle))
        .map((a) => a.handle)
        .sort(),
    );
    for (const agent of minted) {
      const identity = await eventually(
        async () => {
          const res = await fetch(`${svc.url}/api/agents/${agent.handle}/identity`);
          const body = res.status === 200 ? await res.json() : undefined;
          return body?.erc8004 ? body : undefined;
        },
        30_000,
        250,
      );
      expect(identity.erc8004).to.include({
        tokenId: agent.erc8004AgentId,
        owner: agent.account.address,
        ownerMatchesWallet: true,
      });
      expect(identity.erc8004.registrationErrors).to.deep.equal([]);
      const item = await eventually(
        async () => {
          const res = await fetch(`${svc.url}/api/agents/${agent.handle}/best-practices.json`);
          const body = res.status === 200 ? await res.json() : undefined;
          const found = body?.items.find((i: { id: string }) => i.id === 'erc8004-identity');
          return found?.status === 'passed' ? found : undefined;
        },
        30_000,
        250,
      );
      expect(item.status).to.equal('passed');
    }
    const others = demo.agents.filter((a) => a.erc8004AgentId === undefined);
    const plain = await (await fetch(`${svc.url}/api/agents/${others[0]!.handle}/identity`)).json();
    expect(plain.erc8004).to.equal(null);
  });
});

describe('npm run demo: its command line', () => {
  const demo = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'scripts/demo.ts', ...args], { encoding: 'utf8', timeout: 60_000 });

  it('--help explains every option and starts nothing', () => {
    const run = demo('--help');
    expect(run.status).to.equal(0);
    for (const option of ['--agents', '--purchases', '--seconds', '--seed', '--url', '--home', '--exit'])
      expect(run.stdout).to.contain(option);
    expect(run.stdout).to.not.contain('starting the service');
  });

  it('a bad option value is refused with the rule, before anything starts', () => {
    const run = demo('--agents', '1');
    expect(run.status).to.not.equal(0);
    expect(run.stderr).to.contain('at least 2');
    expect(run.stdout).to.not.contain('starting the service');
  });
});
