import { expect } from 'chai';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { balanceOf, newBuyer, type Buyer } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { FacilitatorDouble } from '../support/facilitator-double.js';
import { builtinFacilitator } from '../../src/domain/payments/facilitators.js';
import { REGISTRATION_PRICE_ATOMIC } from '../../src/domain/site.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';

const TIMEOUT_MS = 1200;
const HALF_OPEN_MS = 1000;
const THRESHOLD = 2;
const FUNDED = 10_000_000n;
// anvil's default account 3: the double's own facilitator key. The service's built-in facilitator
// uses the dev chain's facilitator key; two facilitators sharing one key would race for its nonces.
const DOUBLE_KEY = '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6';

interface Breaker {
  name: string;
  kind: string;
  state: 'closed' | 'open' | 'half-open';
  consecutiveFailures: number;
  lastError: string | null;
  openedAt: string | null;
}

/**
 * A remote facilitator (a double speaking the real HTTP API, settling for real on the test chain)
 * configured before the built-in one, which is the fallback. The remote one fails, hangs, recovers
 * and fails its trial while buyers keep paying; its breaker must open, and close again by itself
 * through half-open trials that never carry a payment.
 */
describe('faults: a remote facilitator fails, hangs and recovers while the built-in one is configured', function () {
  this.timeout(90_000);
  let devChain: DevChain;
  let remote: FacilitatorDouble;
  let svc: TestService;
  let n = 0;
  const chain = () => svc.service.runtime.chain;
  const remoteName = () => new URL(remote.url).host;
  const breakers = async () => (await (await fetch(`${svc.url}/api/health/facilitators`)).json()).facilitators as Breaker[];
  const remoteBreaker = async () => (await breakers()).find((b) => b.name === remoteName())!;

  /** Pays for one registration with the official v2 client; the elapsed time counts the paid request only. */
  async function purchase(): Promise<{ buyer: Buyer; status: number; ms: number; paymentId?: string }> {
    const buyer = await newBuyer(chain(), FUNDED);
    const body = await signedVerifyBody(svc.url, buyer.account, `flt-${++n}`);
    const started = performance.now();
    const res = await postVerify(svc.url, body, buyer.payV2);
    const ms = performance.now() - started;
    const json = await res.json();
    return { buyer, status: res.status, ms, paymentId: json.paymentId };
  }

  /** One payment row for the buyer, settled by `facilitator`, and the price taken from its wallet exactly once. */
  async function chargedOnce(buyer: Buyer, facilitator: string) {
    expect(await balanceOf(chain(), buyer.address)).to.equal(FUNDED - REGISTRATION_PRICE_ATOMIC);
    const rows = await svc.service.runtime.database.db
      .selectFrom('payments')
      .select(['status', 'facilitator', 'tx_hash'])
      .where('payer', '=', buyer.address.toLowerCase())
      .execute();
    expect(rows).to.have.length(1);
    expect(rows[0]!.status).to.equal('settled');
    expect(rows[0]!.facilitator).to.equal(facilitator);
    expect(rows[0]!.tx_hash).to.match(/^0x[0-9a-f]{64}$/);
  }

  /** Fails the remote facilitator for THRESHOLD purchases (all served by the built-in one) and returns its open breaker. */
  async function openRemote(mode: FacilitatorDouble['mode'] = { kind: 'fail' }): Promise<Breaker> {
    remote.mode = mode;
    for (let i = 0; i < THRESHOLD; i++) {
      const p = await purchase();
      expect(p.status).to.equal(200);
      await chargedOnce(p.buyer, 'builtin');
    }
    const b = await remoteBreaker();
    expect(b.state).to.equal('open');
    expect(b.openedAt).to.be.a('string');
    return b;
  }

  /** Polls the breaker snapshot until `done`, recording every state change seen and when. */
  async function watchRemote(done: (b: Breaker) => boolean, timeoutMs: number) {
    const seen: Array<{ state: Breaker['state']; at: number; breaker: Breaker }> = [];
    try {
      await eventually(
        async () => {
          const b = await remoteBreaker();
          if (seen.at(-1)?.state !== b.state) seen.push({ state: b.state, at: Date.now(), breaker: b });
          return done(b);
        },
        timeoutMs,
        15,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; states seen: ${seen.map((s) => s.state).join(' -> ') || 'none'}`);
    }
    return seen;
  }

  before(async () => {
    devChain = await startDevChain();
    remote = await new FacilitatorDouble(
      builtinFacilitator({ rpcUrl: devChain.rpcUrl, chain: localChain(devChain.chainId, devChain.rpcUrl), privateKey: DOUBLE_KEY, pollingIntervalMs: 10 }),
    ).start();
    svc = await startTestService({
      RPC_URL: devChain.rpcUrl,
      CHAIN_ID: String(devChain.chainId),
      USDC_ADDRESS: devChain.usdc.address,
      IDENTITY_REGISTRY_ADDRESS: devChain.identityRegistry,
      TREASURY_ADDRESS: devChain.accounts.treasury.address,
      CHAIN_POLL_INTERVAL_MS: '10',
      FACILITATOR_URLS: remote.url,
      FACILITATOR_BUILTIN: 'true',
      FACILITATOR_PRIVATE_KEY: devChain.accounts.facilitator.privateKey,
      FACILITATOR_TIMEOUT_MS: String(TIMEOUT_MS),
      FACILITATOR_FAILURE_THRESHOLD: String(THRESHOLD),
      FACILITATOR_HALF_OPEN_MS: String(HALF_OPEN_MS),
    });
    // A configured chain has no faucet; the tests mint through the dev chain directly.
    (svc.service.runtime.chain as { faucet?: unknown }).faucet = devChain.faucet;
  });
  after(async () => {
    await svc?.stop();
    await remote?.stop();
    await devChain?.stop();
  });
  beforeEach(async () => {
    // Every test starts from a healthy remote facilitator with its breaker closed, which needs the
    // previous test's breaker to have closed by itself.
    remote.mode = { kind: 'ok' };
    await watchRemote((b) => b.state === 'closed', HALF_OPEN_MS + TIMEOUT_MS + 3000);
  });

  it('pays through the remote facilitator while it is healthy', async () => {
    const before = { ...remote.calls };
    const p = await purchase();
    expect(p.status).to.equal(200);
    expect(remote.calls.settle).to.equal(before.settle + 1);
    await chargedOnce(p.buyer, remoteName());
    expect((await breakers()).map((b) => [b.kind, b.state])).to.deep.equal([
      ['remote', 'closed'],
      ['builtin', 'closed'],
    ]);
  });

  it('when the remote facilitator errors, its breaker opens and purchases are settled by the built-in one, each charged once', async () => {
    const treasuryBefore = await balanceOf(chain(), chain().treasury);
    const opened = await openRemote({ kind: 'fail' });
    expect(opened.lastError).to.match(/500|failing/);
    expect(opened.consecutiveFailures).to.equal(THRESHOLD);
    const before = { ...remote.calls };
    const p = await purchase();
    expect(p.status).to.equal(200);
    await chargedOnce(p.buyer, 'builtin');
    expect(remote.calls.verify, 'an open breaker is skipped: no call reaches the failing facilitator').to.equal(before.verify);
    expect(remote.calls.settle).to.equal(before.settle);
    expect(await balanceOf(chain(), chain().treasury)).to.equal(treasuryBefore + BigInt(THRESHOLD + 1) * REGISTRATION_PRICE_ATOMIC);
  });

  it('when the remote facilitator hangs, each request answers within the facilitator timeout plus the fallback, and its breaker opens', async () => {
    remote.mode = { kind: 'hang' };
    for (let i = 0; i < THRESHOLD; i++) {
      const before = remote.calls.verify;
      const p = await purchase();
      expect(p.status).to.equal(200);
      expect(remote.calls.verify, 'the request did wait on the hung facilitator').to.equal(before + 1);
      expect(p.ms, 'bounded by FACILITATOR_TIMEOUT_MS, then served by the built-in facilitator').to.be.within(TIMEOUT_MS, TIMEOUT_MS + 4000);
      await chargedOnce(p.buyer, 'builtin');
    }
    const opened = await remoteBreaker();
    expect(opened.state).to.equal('open');
    expect(opened.lastError).to.match(/timed out/);
    const before = { ...remote.calls };
    const p = await purchase();
    expect(p.status).to.equal(200);
    expect(p.ms, 'an open breaker costs no wait').to.be.below(TIMEOUT_MS);
    expect(remote.calls).to.deep.equal(before);
    await chargedOnce(p.buyer, 'builtin');
  });

  it('when the remote facilitator recovers, its breaker goes half-open and closes by itself without any purchase, and payments return to it', async () => {
    const opened = await openRemote();
    const openedAt = Date.parse(opened.openedAt!);
    // Healthy again, answering in 300 ms: the trial stays in flight long enough to be seen.
    remote.mode = { kind: 'slow', ms: 300 };
    const before = { ...remote.calls };
    const seen = await watchRemote((b) => b.state === 'closed', HALF_OPEN_MS + TIMEOUT_MS + 3000);
    expect(seen.map((s) => s.state)).to.deep.equal(['open', 'half-open', 'closed']);
    const halfOpenAfter = seen[1]!.at - openedAt;
    const closedAfter = seen[2]!.at - openedAt;
    expect(halfOpenAfter, 'the trial starts once FACILITATOR_HALF_OPEN_MS has passed').to.be.within(HALF_OPEN_MS, HALF_OPEN_MS + 600);
    expect(closedAfter, 'and closes the breaker when its answer comes').to.be.within(HALF_OPEN_MS + 300, HALF_OPEN_MS + 300 + 900);
    expect(remote.calls.supported, 'one trial, GET /supported').to.equal(before.supported + 1);
    expect(remote.calls.verify, 'no payment was the trial').to.equal(before.verify);
    expect(remote.calls.settle).to.equal(before.settle);
    const closed = seen[2]!.breaker;
    expect(closed.openedAt).to.equal(null);
    expect(closed.consecutiveFailures).to.equal(0);

    remote.mode = { kind: 'ok' };
    const p = await purchase();
    expect(p.status).to.equal(200);
    expect(remote.calls.verify).to.equal(before.verify + 1);
    expect(remote.calls.settle, 'settled through the remote facilitator again').to.equal(before.settle + 1);
    await chargedOnce(p.buyer, remoteName());
  });

  it('when the trial fails, the breaker opens again for another FACILITATOR_HALF_OPEN_MS and tries again, while payments go to the built-in facilitator', async () => {
    const opened = await openRemote();
    const firstOpenedAt = Date.parse(opened.openedAt!);
    const before = { ...remote.calls };
    const reopened = await eventually(async () => {
      const b = await remoteBreaker();
      return b.state === 'open' && Date.parse(b.openedAt!) > firstOpenedAt ? b : undefined;
    }, HALF_OPEN_MS + TIMEOUT_MS + 3000, 15);
    expect(Date.parse(reopened.openedAt!) - firstOpenedAt).to.be.within(HALF_OPEN_MS, HALF_OPEN_MS + 600);
    expect(remote.calls.supported, 'the failed trial').to.equal(before.supported + 1);
    expect(reopened.lastError).to.match(/500|failing/);

    const p = await purchase();
    expect(p.status).to.equal(200);
    await chargedOnce(p.buyer, 'builtin');

    const again = await eventually(async () => {
      const b = await remoteBreaker();
      return b.state === 'open' && Date.parse(b.openedAt!) > Date.parse(reopened.openedAt!) ? b : undefined;
    }, HALF_OPEN_MS + TIMEOUT_MS + 3000, 15);
    expect(Date.parse(again.openedAt!) - Date.parse(reopened.openedAt!)).to.be.within(HALF_OPEN_MS, HALF_OPEN_MS + 600);
    expect(remote.calls.supported).to.equal(before.supported + 2);
    expect(remote.calls.verify, 'only trials reached the failing facilitator').to.equal(before.verify);
    expect(remote.calls.settle).to.equal(before.settle);
  });

  it('when the trial hangs, payments do not wait for it, and the timeout re-opens the breaker', async () => {
    await openRemote();
    remote.mode = { kind: 'hang' };
    const seen = await watchRemote((b) => b.state === 'half-open', HALF_OPEN_MS + 3000);
    const halfOpenAt = seen.at(-1)!.at;
    const before = { ...remote.calls };
    const p = await purchase();
    expect(p.status).to.equal(200);
    expect(p.ms, 'the payment did not wait for the trial').to.be.below(TIMEOUT_MS);
    expect(remote.calls.verify, 'nor was it sent to the facilitator on trial').to.equal(before.verify);
    await chargedOnce(p.buyer, 'builtin');
    const reopened = await watchRemote((b) => b.state === 'open', TIMEOUT_MS + 3000);
    const b = reopened.at(-1)!.breaker;
    expect(b.lastError).to.match(/timed out/);
    expect(Date.parse(b.openedAt!) - halfOpenAt, 'the trial is bounded by FACILITATOR_TIMEOUT_MS').to.be.within(TIMEOUT_MS - 200, TIMEOUT_MS + 800);
  });
});
