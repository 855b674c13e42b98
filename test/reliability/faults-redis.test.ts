import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { balanceOf, newBuyer } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { FacilitatorDouble } from '../support/facilitator-double.js';
import { RedisServer } from '../support/redis-server.js';
import { builtinFacilitator } from '../../src/domain/payments/facilitators/builtin-facilitator.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { queueReady } from '../../src/platform/queues.js';
import { DependencyUnavailableError } from '../../src/platform/errors.js';
import { reconcilePaymentsJob } from '../../jobs/reconcile-payments.job.js';
import { siteCardJob } from '../../jobs/site-card.job.js';

interface Timed {
  status: number;
  ms: number;
  contentType: string | null;
  retryAfter: string | null;
  text: string;
}

/**
 * Redis lost under the running service and brought back: requests that need it fail fast with
 * 503 and Retry-After, requests that do not need it are served, a paid request whose settlement is
 * unknown is answered anyway (its payment is durable in PostgreSQL), and once Redis is back the
 * workers, the scheduler, the outbox and the metrics recover without a restart and the reconciler
 * settles the payment exactly once.
 */
describe('faults: Redis goes down and comes back', function () {
  this.timeout(180_000);
  const FACILITATOR_TIMEOUT_MS = 1500;
  // Above the facilitator's deadline (and clock skew), as the configuration requires: the reconciler
  // never takes a payment a request may still be settling.
  const STUCK_AFTER_MS = 3000;
  /** Bounds a client sees while Redis is down. */
  const METRICS_BOUND_MS = 1500;
  const DASHBOARD_BOUND_MS = 1000;
  const READYZ_BOUND_MS = 2500;
  // A frozen Redis is found out by the readiness check's own timeout (2 s).
  const READYZ_FROZEN_BOUND_MS = 3000;
  const ENQUEUE_BOUND_MS = 1500;
  // Two requests (the challenge, then the paid one), the facilitator's deadline, and the bounded enqueue.
  const PAID_BOUND_MS = FACILITATOR_TIMEOUT_MS + 1000 + 2500;

  // A Redis of the test's own, so the test can take it away and bring it back on the same port.
  let redis: RedisServer;
  let devChain: DevChain;
  let facilitator: FacilitatorDouble;
  let svc: TestService;
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  const chain = () => svc.service.runtime.chain;
  const admin = () => ({ authorization: `Bearer ${svc.adminToken}` });

  const timed = async (path: string, headers: Record<string, string> = {}): Promise<Timed> => {
    const started = performance.now();
    const res = await fetch(`${svc.url}${path}`, { headers });
    const text = await res.text();
    return {
      status: res.status,
      ms: Math.round(performance.now() - started),
      contentType: res.headers.get('content-type'),
      retryAfter: res.headers.get('retry-after'),
      text,
    };
  };
  /** The reconciler takes a settling payment only once it has been in flight longer than the threshold. */
  const inFlightPastThreshold = (paymentId: string) =>
    eventually(
      async () => {
        const p = await svc.service.runtime.database.db
          .selectFrom('payments')
          .select(['status', 'updated_at'])
          .where('id', '=', paymentId)
          .executeTakeFirstOrThrow();
        return p.status !== 'settling' || Date.now() - p.updated_at.getTime() > STUCK_AFTER_MS;
      },
      STUCK_AFTER_MS + 5000,
      100,
    );
  const gauge = (metrics: string, line: RegExp) => {
    const m = metrics.match(line);
    return m ? Number(m[1]) : undefined;
  };

  before(async () => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    redis = await RedisServer.start();
    // The chain comes first so the remote facilitator can settle on it; the service uses it via RPC_URL.
    devChain = await startDevChain();
    facilitator = await new FacilitatorDouble(
      builtinFacilitator({
        rpcUrl: devChain.rpcUrl,
        chain: localChain(devChain.chainId, devChain.rpcUrl),
        privateKey: devChain.accounts.facilitator.privateKey,
      }),
    ).start();
    svc = await startTestService({
      REDIS_URL: redis.url,
      RPC_URL: devChain.rpcUrl,
      CHAIN_ID: String(devChain.chainId),
      USDC_ADDRESS: devChain.usdc.address,
      IDENTITY_REGISTRY_ADDRESS: devChain.identityRegistry,
      TREASURY_ADDRESS: devChain.accounts.treasury.address,
      FACILITATOR_BUILTIN: 'false',
      FACILITATOR_URLS: facilitator.url,
      FACILITATOR_TIMEOUT_MS: String(FACILITATOR_TIMEOUT_MS),
      PAYMENTS_STUCK_AFTER_MS: String(STUCK_AFTER_MS),
      // Every second (the job id is per minute, so it runs once a minute): shows the scheduler enqueueing after the outage.
      SITE_CARD_CRON: '* * * * * *',
    });
    // A configured chain has no faucet; the test mints through the dev chain directly.
    (svc.service.runtime.chain as { faucet?: unknown }).faucet = devChain.faucet;
  });

  after(async () => {
    // Workers wait for Redis to close, so it must be there, and answering, when the service stops.
    redis?.thaw();
    if (svc && redis && !redis.running) await redis.restart();
    await svc?.stop();
    await facilitator?.stop();
    await devChain?.stop();
    await redis?.kill();
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
  });

  it('while Redis is down, /metrics answers quickly with the queue gauge marked stale, the dashboard answers 503 and /readyz "degraded" quickly, and published documents are still served', async () => {
    const live = await timed('/metrics', admin());
    expect(live.status).to.equal(200);
    expect(gauge(live.text, /^queue_jobs_stale (\d+)$/m)).to.equal(0);
    const readAt = gauge(live.text, /^queue_jobs_last_read_timestamp_seconds (\S+)$/m)!;
    expect(readAt).to.be.greaterThan(0);

    await redis.kill();
    await eventually(async () => !queueReady(svc.service.runtime.queues.payments), 5000, 10);

    const metrics = await timed('/metrics', admin());
    const dashboard = await timed('/admin/queues', admin());
    const dashboardApi = await timed('/admin/queues/api/queues', admin());
    const denied = await timed('/admin/queues');
    const ready = await timed('/readyz');
    const card = await timed('/.well-known/agent-card.json');
    console.log(
      `      Redis down: /metrics ${metrics.status} in ${metrics.ms} ms, /admin/queues ${dashboard.status} in ${dashboard.ms} ms ` +
        `(api ${dashboardApi.status} in ${dashboardApi.ms} ms), /readyz ${ready.status} in ${ready.ms} ms, agent card ${card.status} in ${card.ms} ms`,
    );

    expect(metrics.status).to.equal(200);
    expect(metrics.ms).to.be.below(METRICS_BOUND_MS);
    expect(gauge(metrics.text, /^queue_jobs_stale (\d+)$/m), 'the queue gauge is reported stale').to.equal(1);
    expect(
      gauge(metrics.text, /^queue_jobs_last_read_timestamp_seconds (\S+)$/m),
      'the last read is the one before the outage',
    ).to.equal(readAt);
    expect(metrics.text, 'the last values read are kept').to.match(
      /^queue_jobs\{queue="documents",state="completed"\} \d+$/m,
    );

    for (const page of [dashboard, dashboardApi]) {
      expect(page.status).to.equal(503);
      expect(page.ms).to.be.below(DASHBOARD_BOUND_MS);
      expect(page.contentType).to.match(/^application\/problem\+json/);
      expect(JSON.parse(page.text).code).to.equal('dependency_unavailable');
      expect(Number(page.retryAfter)).to.be.greaterThan(0);
    }
    expect(denied.status, 'without the admin token the dashboard says nothing about Redis').to.equal(401);

    expect(ready.status, 'Redis is shared by every replica: it degrades readiness, it does not fail it').to.equal(200);
    expect(JSON.parse(ready.text).status).to.equal('degraded');
    expect(ready.ms).to.be.below(READYZ_BOUND_MS);
    const checks = JSON.parse(ready.text).checks;
    expect(checks.redis.status).to.equal('failed');
    expect(checks.database.status).to.equal('ok');

    expect(card.status).to.equal(200);
    expect(JSON.parse(card.text)).to.be.an('object');
    expect(uncaught, 'uncaught exceptions or unhandled rejections').to.deep.equal([]);
  });

  it('a paid request whose settlement is unknown while Redis is down is answered in bounded time; once Redis is back, the service recovers without a restart and the reconciler settles the payment exactly once', async () => {
    expect(redis.running, 'Redis is still down from the previous test').to.equal(false);
    const { db } = svc.service.runtime.database;
    const { queues } = svc.service.runtime;

    // A paid request whose settlement is known needs no Redis: its events wait in the outbox.
    const regular = await newBuyer(chain());
    const handle = `redis-down-${Date.now().toString(36)}`;
    const paid = await postVerify(svc.url, await signedVerifyBody(svc.url, regular.account, handle), regular.payV2);
    expect(paid.status).to.equal(200);
    const registered = (await paid.json()).agent.id as string;

    // The facilitator settles on chain but answers after the service's deadline: the outcome is unknown.
    facilitator.mode = { kind: 'settle-late', ms: FACILITATOR_TIMEOUT_MS + 1500 };
    const settlesBefore = facilitator.calls.settle;
    const buyer = await newBuyer(chain());
    const body = await signedVerifyBody(svc.url, buyer.account, `redis-unknown-${Date.now().toString(36)}`);
    const started = performance.now();
    const res = await postVerify(svc.url, body, buyer.payV2);
    const paidMs = Math.round(performance.now() - started);
    const problem = await res.json();
    console.log(
      `      Redis down: a paid request with an unknown settlement was answered ${res.status} ${problem.code} after ${paidMs} ms`,
    );
    expect(res.status).to.equal(402);
    expect(problem.code).to.equal('settlement_pending');
    expect(paidMs).to.be.below(PAID_BOUND_MS);
    const paymentId = problem.paymentId as string;
    const row = await db.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
    expect(row.status, 'durable in PostgreSQL, waiting for the reconciler').to.equal('settling');
    // The facilitator's late answer is lost, but its transaction is mined: the money has moved once.
    await eventually(async () => (await balanceOf(chain(), buyer.address)) === 9_000_000n, 10_000, 100);
    facilitator.mode = { kind: 'ok' };

    await redis.restart();
    const restartedAt = Date.now();
    const backAt = performance.now();
    await eventually(async () => Object.values(queues).every(queueReady), 15_000, 20);
    const reconnectMs = Math.round(performance.now() - backAt);

    // The metrics read live values again.
    const metrics = await eventually(
      async () => {
        const m = await timed('/metrics', admin());
        return gauge(m.text, /^queue_jobs_stale (\d+)$/m) === 0 ? m : undefined;
      },
      15_000,
      100,
    );
    expect(gauge(metrics.text, /^queue_jobs_last_read_timestamp_seconds (\S+)$/m)! * 1000).to.be.at.least(
      restartedAt - 1000,
    );
    expect((await timed('/readyz')).status).to.equal(200);
    expect((await timed('/admin/queues/api/queues', admin())).status).to.equal(200);

    // The scheduler enqueues again: this Redis kept nothing, so a site-card job is a tick after the outage.
    await eventually(
      async () =>
        (await queues.documents.getJobs(['waiting', 'active', 'completed', 'delayed'])).some(
          (j) => j.name === siteCardJob.name,
        ),
      20_000,
      100,
    );
    // The outbox dispatches what the outage held back, and the workers run it.
    await eventually(
      async () => {
        const events = await db
          .selectFrom('domain_events')
          .select('dispatched_at')
          .where('agent_id', '=', registered)
          .execute();
        return events.length > 0 && events.every((e) => e.dispatched_at !== null);
      },
      20_000,
      100,
    );
    await eventually(async () => svc.service.runtime.store.get(`api/agents/${handle}/score.json`), 20_000, 100);

    // Nothing settles the payment until the reconciler runs: the retry job was never queued.
    expect(
      (await db.selectFrom('payments').select('status').where('id', '=', paymentId).executeTakeFirstOrThrow()).status,
    ).to.equal('settling');
    // The scheduler's every-minute tick, run now rather than at the next minute: the same job
    // through the same queue and worker, with the configured threshold (PAYMENTS_STUCK_AFTER_MS).
    await inFlightPastThreshold(paymentId);
    await queues.payments.add(reconcilePaymentsJob.name, {}, { jobId: `test-reconcile-${Date.now()}` });
    const settled = await eventually(
      async () => {
        const p = await db.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
        return p.status === 'settled' ? p : undefined;
      },
      30_000,
      100,
    );
    const recoveredMs = Math.round(performance.now() - backAt);
    console.log(
      `      Redis back: producers ready after ${reconnectMs} ms, the payment settled by the reconciler ${recoveredMs} ms after the restart`,
    );

    expect(settled.tx_hash).to.match(/^0x[0-9a-f]{64}$/);
    expect(settled.settled_at).to.not.equal(null);
    expect(await balanceOf(chain(), buyer.address), 'debited exactly once').to.equal(9_000_000n);
    expect(
      facilitator.calls.settle - settlesBefore,
      'settled from the chain, never sent to a facilitator again',
    ).to.equal(1);
    const payments = await db
      .selectFrom('payments')
      .select(['id', 'status'])
      .where('payer', '=', buyer.address.toLowerCase())
      .execute();
    expect(payments).to.deep.equal([{ id: paymentId, status: 'settled' }]);
    const agents = await db
      .selectFrom('agents')
      .select('id')
      .where('wallet_address', '=', buyer.address.toLowerCase())
      .execute();
    expect(agents, 'the registration it paid for exists once').to.have.length(1);
    expect(uncaught, 'uncaught exceptions or unhandled rejections').to.deep.equal([]);
  });

  it('when Redis stops answering with its connections open (a partition, a stalled host), the same waits are bounded by timeouts, and everything goes on once it answers again', async () => {
    expect(redis.running).to.equal(true);
    const { db } = svc.service.runtime.database;
    const { queues } = svc.service.runtime;
    facilitator.mode = { kind: 'settle-late', ms: FACILITATOR_TIMEOUT_MS + 1500 };
    const buyer = await newBuyer(chain());
    const body = await signedVerifyBody(svc.url, buyer.account, `redis-frozen-${Date.now().toString(36)}`);
    await timed('/metrics', admin());

    redis.freeze();
    try {
      // The connection still reads as ready: only timeouts can tell.
      expect(queueReady(queues.payments)).to.equal(true);
      const [metrics, dashboard, ready] = await Promise.all([
        timed('/metrics', admin()),
        timed('/admin/queues/api/queues', admin()),
        timed('/readyz'),
      ]);
      const enqueueStarted = performance.now();
      const refused = await svc.service.runtime.enqueueSettlement(randomUUID()).then(
        () => undefined,
        (err: unknown) => err,
      );
      const enqueueMs = Math.round(performance.now() - enqueueStarted);
      const paidStarted = performance.now();
      const res = await postVerify(svc.url, body, buyer.payV2);
      const paidMs = Math.round(performance.now() - paidStarted);
      const problem = await res.json();
      console.log(
        `      Redis frozen: /metrics ${metrics.status} in ${metrics.ms} ms, /admin/queues ${dashboard.status} in ${dashboard.ms} ms, ` +
          `/readyz ${ready.status} in ${ready.ms} ms, an enqueue refused in ${enqueueMs} ms, a paid request with an unknown settlement ${res.status} in ${paidMs} ms`,
      );

      expect(metrics.status).to.equal(200);
      expect(metrics.ms).to.be.below(METRICS_BOUND_MS);
      expect(gauge(metrics.text, /^queue_jobs_stale (\d+)$/m)).to.equal(1);
      expect(dashboard.status).to.equal(503);
      expect(dashboard.ms).to.be.below(DASHBOARD_BOUND_MS);
      expect(JSON.parse(dashboard.text).code).to.equal('dependency_unavailable');
      expect(Number(dashboard.retryAfter)).to.be.greaterThan(0);
      expect(ready.status).to.equal(200);
      expect(JSON.parse(ready.text).status).to.equal('degraded');
      expect(ready.ms).to.be.below(READYZ_FROZEN_BOUND_MS);
      expect(JSON.parse(ready.text).checks.redis.status).to.equal('failed');
      expect(refused).to.be.instanceOf(DependencyUnavailableError);
      expect(enqueueMs).to.be.below(ENQUEUE_BOUND_MS);
      expect(res.status).to.equal(402);
      expect(problem.code).to.equal('settlement_pending');
      expect(paidMs).to.be.below(PAID_BOUND_MS);
    } finally {
      redis.thaw();
      facilitator.mode = { kind: 'ok' };
    }
    const paymentId = (
      await db
        .selectFrom('payments')
        .select('id')
        .where('payer', '=', buyer.address.toLowerCase())
        .executeTakeFirstOrThrow()
    ).id;

    await eventually(
      async () => {
        const m = await timed('/metrics', admin());
        return gauge(m.text, /^queue_jobs_stale (\d+)$/m) === 0;
      },
      15_000,
      100,
    );
    expect((await timed('/admin/queues/api/queues', admin())).status).to.equal(200);
    await inFlightPastThreshold(paymentId);
    await queues.payments.add(reconcilePaymentsJob.name, {}, { jobId: `test-reconcile-${Date.now()}` });
    await eventually(
      async () =>
        (await db.selectFrom('payments').select('status').where('id', '=', paymentId).executeTakeFirstOrThrow())
          .status === 'settled',
      30_000,
      100,
    );
    expect(await balanceOf(chain(), buyer.address)).to.equal(9_000_000n);
    expect(uncaught, 'uncaught exceptions or unhandled rejections').to.deep.equal([]);
  });
});
