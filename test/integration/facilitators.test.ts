import { expect } from 'chai';
import { startTestService, eventually, settledPayment, type TestService } from '../support/service.js';
import { balanceOf, newBuyer } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { FacilitatorDouble } from '../support/facilitator-double.js';
import { builtinFacilitator } from '../../src/domain/payments/facilitators/builtin-facilitator.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { reconcilePaymentsJob } from '../../jobs/reconcile-payments.job.js';

/**
 * The service is configured with remote facilitators only (doubles speaking the real HTTP API,
 * backed by a real facilitator on the service's chain), so breaker, failover and outage
 * behaviour can be driven from the test.
 */
describe('facilitators: breakers, failover, outages and unknown settlements', function () {
  this.timeout(90_000);
  let devChain: DevChain;
  let primary: FacilitatorDouble;
  let secondary: FacilitatorDouble;
  let svc: TestService;
  let n = 0;
  const chain = () => svc.service.runtime.chain;
  const handle = () => `fac-${++n}`;
  const operator = () => ({ headers: { authorization: `Bearer ${svc.adminToken}` } });
  const breakers = async () =>
    (await (await fetch(`${svc.url}/api/health/facilitators`, operator())).json()).facilitators as Array<{
      name: string;
      state: string;
      lastError: string | null;
    }>;

  before(async () => {
    // The chain is started first so the doubles can settle on it; the service uses it via RPC_URL.
    devChain = await startDevChain();
    const backend = () =>
      builtinFacilitator({
        rpcUrl: devChain.rpcUrl,
        chain: localChain(devChain.chainId, devChain.rpcUrl),
        privateKey: devChain.accounts.facilitator.privateKey,
      });
    primary = await new FacilitatorDouble(backend()).start();
    secondary = await new FacilitatorDouble(backend()).start();
    svc = await startTestService({
      RPC_URL: devChain.rpcUrl,
      CHAIN_ID: String(devChain.chainId),
      USDC_ADDRESS: devChain.usdc.address,
      IDENTITY_REGISTRY_ADDRESS: devChain.identityRegistry,
      TREASURY_ADDRESS: devChain.accounts.treasury.address,
      FACILITATOR_BUILTIN: 'false',
      FACILITATOR_URLS: `${primary.url},${secondary.url}`,
      FACILITATOR_TIMEOUT_MS: '1500',
      FACILITATOR_FAILURE_THRESHOLD: '2',
      FACILITATOR_HALF_OPEN_MS: '1000',
    });
    // A configured chain has no faucet; the tests mint through the dev chain directly.
    (svc.service.runtime.chain as { faucet?: unknown }).faucet = devChain.faucet;
  });
  after(async () => {
    await svc?.stop();
    await primary?.stop();
    await secondary?.stop();
    await devChain?.stop();
  });
  beforeEach(() => {
    primary.mode = { kind: 'ok' };
    secondary.mode = { kind: 'ok' };
  });

  it('pays through the first remote facilitator over the facilitator HTTP API', async () => {
    const buyer = await newBuyer(chain());
    const before = { ...primary.calls };
    const res = await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, handle()), buyer.payV2);
    expect(res.status).to.equal(200);
    expect(primary.calls.verify).to.equal(before.verify + 1);
    expect(primary.calls.settle).to.equal(before.settle + 1);
    const health = await (await fetch(`${svc.url}/api/payment/health`)).json();
    expect(health.status).to.equal('ok');
    expect(health.providers.map((p: { ok: boolean }) => p.ok)).to.deep.equal([true, true]);
  });

  it('when the first facilitator fails, its breaker opens, payments fail over to the second, and it closes again after recovery', async () => {
    primary.mode = { kind: 'fail' };
    for (let i = 0; i < 2; i++) {
      const buyer = await newBuyer(chain());
      const res = await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, handle()), buyer.payV2);
      expect(res.status, 'failed over to the second facilitator').to.equal(200);
    }
    const open = (await breakers()).find((b) => b.name === new URL(primary.url).host)!;
    expect(open.state).to.equal('open');
    expect(open.lastError).to.match(/500|failing/);
    const probe = await (await fetch(`${svc.url}/api/payment/health`)).json();
    expect(probe.status).to.equal('degraded');
    // Anyone is told which facilitator failed, never its URL or its error (they may hold hosts and keys).
    const publicBreakers = (await (await fetch(`${svc.url}/api/health/facilitators`)).json()).facilitators;
    const publicProbe = await (await fetch(`${svc.url}/api/payment/health`)).json();
    for (const answer of [JSON.stringify(publicBreakers), JSON.stringify(publicProbe)]) {
      expect(answer).to.not.contain(primary.url);
    }
    const failed = publicBreakers.find((b: { name: string }) => b.name === new URL(primary.url).host);
    expect(failed.lastError).to.equal('failed (details with the admin token)');
    for (const p of publicProbe.providers) expect(p).to.not.have.property('url');
    expect(JSON.stringify(await (await fetch(`${svc.url}/api/payment/health`, operator())).json())).to.contain(
      primary.url,
    );

    primary.mode = { kind: 'ok' };
    // The pool's own trial (GET /supported) closes the breaker; no payment is the trial.
    const supportedBefore = primary.calls.supported;
    await eventually(
      async () => (await breakers()).find((b) => b.name === new URL(primary.url).host)!.state === 'closed',
      5000,
      20,
    );
    expect(primary.calls.supported).to.be.greaterThan(supportedBefore);
    const buyer = await newBuyer(chain());
    const verifiesBefore = primary.calls.verify;
    expect(
      (await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, handle()), buyer.payV2)).status,
    ).to.equal(200);
    expect(primary.calls.verify, 'payments go to the recovered facilitator again').to.equal(verifiesBefore + 1);
  });

  it('a facilitator that refuses payments with 4xx is answering, not down: its breaker stays closed', async () => {
    primary.mode = { kind: 'refuse-4xx' };
    for (let i = 0; i < 3; i++) {
      const buyer = await newBuyer(chain());
      const res = await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, handle()), buyer.payV2);
      const body = await res.json();
      expect(
        res.status,
        JSON.stringify({ body, calls: primary.calls, second: secondary.calls, b: await breakers() }),
      ).to.equal(402);
      expect(body.code).to.equal('invalid_exact_evm_signature');
    }
    expect((await breakers()).find((b) => b.name === new URL(primary.url).host)!.state).to.equal('closed');
  });

  it('when every facilitator is down, a paid request gets 503 with Retry-After, nothing is charged, and free endpoints still answer', async () => {
    await primary.stop();
    await secondary.stop();
    try {
      const buyer = await newBuyer(chain());
      const body = await signedVerifyBody(svc.url, buyer.account, handle());
      const before = await balanceOf(chain(), buyer.address);
      const res = await postVerify(svc.url, body, buyer.payV2);
      expect(res.status).to.equal(503);
      expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
      expect((await res.json()).code).to.equal('facilitator_unavailable');
      expect(await balanceOf(chain(), buyer.address)).to.equal(before);
      const stored = await svc.service.runtime.database.db
        .selectFrom('payments')
        .selectAll()
        .where('payer', '=', buyer.address.toLowerCase())
        .execute();
      expect(stored, 'the claim is released so the same authorization can be sent again later').to.deep.equal([]);
      expect((await fetch(`${svc.url}/healthz`)).status).to.equal(200);
      expect((await fetch(`${svc.url}/.well-known/agent-card.json`)).status).to.equal(200);
      const probe = await fetch(`${svc.url}/api/payment/health`);
      expect(probe.status).to.equal(503);
      expect((await probe.json()).status).to.equal('down');
    } finally {
      await primary.restart();
      await secondary.restart();
      // The next test pays through the first facilitator: wait for the trials that close the breakers.
      await eventually(async () => (await breakers()).every((b) => b.state === 'closed'), 10_000, 20);
    }
  });

  it('when a settlement answer is lost, the request gets 402 settlement_pending and the payment is settled from the chain by the retry job', async () => {
    primary.mode = { kind: 'settle-late', ms: 2500 };
    const buyer = await newBuyer(chain());
    const body = await signedVerifyBody(svc.url, buyer.account, handle());
    const res = await postVerify(svc.url, body, buyer.payV2);
    expect(res.status).to.equal(402);
    const problem = await res.json();
    expect(problem.code).to.equal('settlement_pending');
    expect(problem.paymentId).to.be.a('string');
    const settled = await settledPayment(svc.url, problem.paymentId, 20_000);
    expect(settled.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - 1_000_000n);
    // The registration the payment bought exists, exactly once.
    const agents = await svc.service.runtime.database.db
      .selectFrom('agents')
      .selectAll()
      .where('wallet_address', '=', buyer.address.toLowerCase())
      .execute();
    expect(agents).to.have.length(1);
    // Retrying the same request now gets the registration, without a second charge.
    primary.mode = { kind: 'ok' };
    const retried = await postVerify(svc.url, body, buyer.payV2);
    expect(retried.status).to.equal(200);
    expect((await retried.json()).agent.id).to.equal(agents[0]!.id);
    expect(await balanceOf(chain(), buyer.address)).to.equal(9_000_000n);
  });

  it('a settle answered settlement_pending (sent, receipt not seen in time) is resolved from the chain, never marked failed', async () => {
    primary.mode = { kind: 'settle-pending' };
    const buyer = await newBuyer(chain());
    const body = await signedVerifyBody(svc.url, buyer.account, handle());
    const res = await postVerify(svc.url, body, buyer.payV2);
    expect(res.status).to.equal(402);
    const problem = await res.json();
    expect(problem.code).to.equal('settlement_pending');
    // The transfer landed: the retry job finds it on chain and settles the payment with its effect.
    const settled = await eventually(
      async () => {
        const p = await (await fetch(`${svc.url}/api/payments/${problem.paymentId}`)).json();
        expect(p.status, `a pending settlement is never failed: ${JSON.stringify(p)}`).to.not.equal('failed');
        return p.status === 'settled' ? p : undefined;
      },
      20_000,
      200,
    );
    expect(settled.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(chain(), buyer.address)).to.equal(9_000_000n);
    primary.mode = { kind: 'ok' };
    const retried = await postVerify(svc.url, body, buyer.payV2);
    expect(retried.status).to.equal(200);
    const agents = await svc.service.runtime.database.db
      .selectFrom('agents')
      .select('id')
      .where('wallet_address', '=', buyer.address.toLowerCase())
      .execute();
    expect(agents).to.have.length(1);
    expect((await retried.json()).agent.id).to.equal(agents[0]!.id);
    expect(await balanceOf(chain(), buyer.address)).to.equal(9_000_000n);
  });

  it('the reconciler releases a claim whose request died before settling, so nothing is charged', async () => {
    const buyer = await newBuyer(chain());
    const { db } = svc.service.runtime.database;
    const [row] = await db
      .insertInto('payments')
      .values({
        purpose: 'registration',
        status: 'verified',
        protocol_version: 2,
        network: chain().network,
        asset: chain().usdc.address.toLowerCase(),
        payer: buyer.address.toLowerCase(),
        pay_to: chain().treasury.toLowerCase(),
        amount_atomic: '1000000',
        nonce: `0x${'ab'.repeat(32)}`,
        valid_after: new Date(0),
        valid_before: new Date(Date.now() + 600_000),
        resource: `${svc.url}/api/agents/verify`,
        registration_handle: handle(),
        registration_wallet: buyer.address.toLowerCase(),
        payload: {},
        requirements: {},
        updated_at: new Date(Date.now() - 120_000),
      })
      .returning('id')
      .execute();
    await reconcilePaymentsJob.run(jobContext(svc.service.runtime), {});
    await eventually(
      async () => !(await db.selectFrom('payments').select('id').where('id', '=', row!.id).executeTakeFirst()),
      15_000,
      200,
    );
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n);
  });
});
