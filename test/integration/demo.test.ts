import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { erc20Abi, isAddressEqual, parseEventLogs, type Hex } from 'viem';
import { runDemo, type DemoResult } from '../../scripts/demo/marketplace.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { eventually, startTestService, type TestService } from '../support/service.js';

describe('npm run demo: a simulated marketplace through the public API', function () {
  this.timeout(120_000);
  let svc: TestService;
  let demo: DemoResult;
  const phases: string[] = [];
  /** Each phase's announced number of steps: its progress bar's length. */
  const totals: number[] = [];
  let steps = 0;

  before(async () => {
    svc = await startTestService();
    demo = await runDemo({
      baseUrl: svc.url,
      agents: 7,
      purchases: 14,
      tradingSeconds: 0,
      onPhase: (phase, total) => {
        phases.push(phase);
        totals.push(total);
      },
      onStep: () => steps++,
    });
  });
  after(() => svc?.stop());

  it('registers every agent by paying, publishes skills and settles purchases, with no failed step', () => {
    expect(demo.failures).to.deep.equal([]);
    expect(phases).to.deep.equal(['registering', 'publishing', 'trading', 'trust']);
    expect(demo.agents).to.have.length(7);
    expect(demo.skills.length).to.be.greaterThan(6);
    // The trading phase makes the purchases asked for; reviews and refunds may buy a few more.
    expect(totals.slice(0, 3)).to.deep.equal([7, demo.agents.filter((a) => a.activity > 0).length, 14]);
    expect(demo.purchases.length).to.be.at.least(14);
    // Every progress bar fills: each phase makes every step it announced.
    expect(steps).to.equal(totals.reduce((a, b) => a + b, 0));
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

  it('buyers review what they bought: on chain and verified for a seller with an ERC-8004 identity, not on chain for one without', async () => {
    const seller = (handle: string) => demo.agents.find((a) => a.handle === handle)!;
    const onChain = demo.reviews.filter((r) => seller(r.seller).erc8004AgentId);
    const offChain = demo.reviews.filter((r) => !seller(r.seller).erc8004AgentId);
    expect(onChain.length).to.be.at.least(1);
    expect(offChain.length).to.be.at.least(1);
    for (const r of onChain) {
      expect(r.feedbackTx, r.paymentId).to.match(/^0x[0-9a-f]{64}$/);
      expect(r.onChain, r.paymentId).to.equal('verified');
    }
    for (const r of offChain) expect(r.onChain, r.paymentId).to.equal('not_on_chain');
    expect(new Set(demo.reviews.map((r) => r.stars)).size).to.be.greaterThan(1);
    expect(demo.reviews.filter((r) => r.response)).to.have.length(1);

    // Each reviewed skill's reviews.json counts exactly the reviews written, with their stars and the response.
    for (const postId of new Set(demo.reviews.map((r) => r.postId))) {
      const written = demo.reviews.filter((r) => r.postId === postId);
      const doc = await eventually(
        async () => {
          const d = await (await fetch(`${svc.url}/api/posts/${postId}/reviews.json`)).json();
          return d.rating?.count === written.length &&
            d.reviews.every((x: { onChain: { status: string } }) => x.onChain.status !== 'not_given')
            ? d
            : undefined;
        },
        30_000,
        250,
      );
      const mean = written.reduce((sum, r) => sum + r.stars, 0) / written.length;
      expect(doc.rating.mean).to.equal(Math.round(mean * 100) / 100);
      for (const r of written) {
        const listed = doc.reviews.find((x: { paymentId: string }) => x.paymentId === r.paymentId);
        expect(listed, r.paymentId).to.include({ rating: r.stars });
        expect(listed.onChain.status).to.equal(r.onChain);
        expect(listed.response?.text ?? undefined).to.equal(r.response);
      }
    }

    // The seller's rating summary counts its reviews over all its skills.
    const identified = onChain[0]!.seller;
    const rating = await eventually(
      async () => {
        const body = await (await fetch(`${svc.url}/api/agents/${identified}/rating.json`)).json();
        return body.rating?.count === onChain.filter((r) => r.seller === identified).length ? body : undefined;
      },
      30_000,
      250,
    );
    expect(rating.refunds.refunds).to.equal(
      demo.refunds.filter((r) => r.seller === identified && r.outcome === 'refunded').length,
    );
  });

  it('one refund request is accepted and the USDC moves back to the buyer on chain; another is declined with a reason', async () => {
    expect(demo.refunds.map((r) => r.outcome)).to.deep.equal(['refunded', 'declined']);
    const [refunded, declined] = demo.refunds as [DemoResult['refunds'][number], DemoResult['refunds'][number]];
    const agent = (handle: string) => demo.agents.find((a) => a.handle === handle)!;

    const record = await (await fetch(`${svc.url}/api/purchases/${refunded.paymentId}/refund`)).json();
    expect(record.request).to.include({ status: 'accepted', reason: refunded.reason });
    expect(record.refund).to.include({ status: 'settled', amount: refunded.amountAtomic, txHash: refunded.txHash });
    expect(record.refund.receipt.typedData.message.refundTransaction).to.equal(refunded.txHash);
    // The refund's transaction carries the transfer of the price from the seller's wallet back to the buyer's.
    const chain = svc.service.runtime.chain;
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: refunded.txHash as Hex });
    const transfers = parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: 'Transfer' }).filter((l) =>
      isAddressEqual(l.address, chain.usdc.address),
    );
    expect(
      transfers.some(
        (t) =>
          isAddressEqual(t.args.from, agent(refunded.seller).account.address) &&
          isAddressEqual(t.args.to, agent(refunded.buyer).account.address) &&
          t.args.value === BigInt(refunded.amountAtomic),
      ),
    ).to.equal(true);

    const refused = await (await fetch(`${svc.url}/api/purchases/${declined.paymentId}/refund`)).json();
    expect(refused.request).to.include({
      status: 'declined',
      reason: declined.reason,
      declineReason: declined.declineReason,
    });
    expect(refused.request.declineText).to.be.a('string').and.not.equal('');
    expect(refused.refund).to.equal(null);
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
