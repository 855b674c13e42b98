import { expect } from 'chai';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { balanceOf, newBuyer, type Buyer } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { FacilitatorDouble } from '../support/facilitator-double.js';
import { builtinFacilitator } from '../../src/domain/payments/facilitators/builtin-facilitator.js';
import { REGISTRATION_PRICE_ATOMIC } from '../../src/domain/site.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';

// The timings below hold on a slow, noisy 2-core machine, up to 3× slower from one day to the next,
// where a paid request may take a few hundred ms and timers may fire late.
// The remote facilitator's deadline: far above a paid request, so that a request which did not
// wait for a hung facilitator is told apart from one that did, however slow the machine.
const TIMEOUT_MS = 2000;
// How long an open breaker waits for its trial: far above what a test does while the breaker must
// stay open (a paid request or two), so the breaker cannot move on underneath the test.
const HALF_OPEN_MS = 3000;
// How late a timer-driven step (a trial, a timeout) may be seen after it is due: the event loop's
// lag and the 15 ms polling, tens of ms when measured. Allowed far more, yet less than
// HALF_OPEN_MS, so a trial that missed its turn and came one delay later still fails the test.
const LATE_MS = 2000;
// The longest wait for a breaker to change state; only a failing test waits it out.
const WAIT_MS = HALF_OPEN_MS + TIMEOUT_MS + LATE_MS + 5000;
// How long the recovered facilitator takes to answer, so that its trial is seen in flight.
const TRIAL_ANSWER_MS = 500;
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
  const breakers = async () =>
    (
      await (
        await fetch(`${svc.url}/api/health/facilitators`, { headers: { authorization: `Bearer ${svc.adminToken}` } })
      ).json()
    ).facilitators as Breaker[];
  const remoteBreaker = async () => (await breakers()).find((b) => b.name === remoteName())!;

  /** A funded buyer with a signed sign-in, ready to pay: made ahead when a test must pay within a window. */
  async function prepare(): Promise<{ buyer: Buyer; body: string }> {
    const buyer = await newBuyer(chain(), FUNDED);
    return { buyer, body: await signedVerifyBody(svc.url, buyer.account, `flt-${++n}`) };
  }

  /**
   * Pays for one registration with the official v2 client. `ms` counts the paid request only;
   * `startedAt` and `endedAt` are on the clock the service stamps its breaker times with.
   */
  async function pay({ buyer, body }: { buyer: Buyer; body: string }) {
    const startedAt = Date.now();
    const started = performance.now();
    const res = await postVerify(svc.url, body, buyer.payV2);
    const json = await res.json();
    const ms = performance.now() - started;
    return {
      buyer,
      status: res.status,
      ms,
      startedAt,
      endedAt: Date.now(),
      paymentId: json.paymentId as string | undefined,
    };
  }

  const purchase = async () => pay(await prepare());

  async function prepareMany(count: number) {
    const ready = [];
    for (let i = 0; i < count; i++) ready.push(await prepare());
    return ready;
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

  /**
   * Fails the remote facilitator for THRESHOLD purchases (all served by the built-in one) and returns
   * its breaker, opened by the last of them. The breaker is read as soon as that purchase is answered
   * and the slower on-chain checks come after, so it is read well within HALF_OPEN_MS of opening.
   */
  async function openRemote(): Promise<Breaker> {
    const buyers = await prepareMany(THRESHOLD);
    remote.mode = { kind: 'fail' };
    const paid = [];
    for (const ready of buyers) {
      const p = await pay(ready);
      expect(p.status).to.equal(200);
      paid.push(p);
    }
    const b = await remoteBreaker();
    const last = paid.at(-1)!;
    expect(b.state, `read ${Date.now() - last.endedAt} ms after the failing purchase`).to.equal('open');
    expect(b.openedAt).to.be.a('string');
    expect(Date.parse(b.openedAt!), 'opened by the last failing purchase, not re-opened since').to.be.within(
      last.startedAt,
      last.endedAt,
    );
    for (const p of paid) await chargedOnce(p.buyer, 'builtin');
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
      builtinFacilitator({
        rpcUrl: devChain.rpcUrl,
        chain: localChain(devChain.chainId, devChain.rpcUrl),
        privateKey: DOUBLE_KEY,
        pollingIntervalMs: 10,
      }),
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
    await watchRemote((b) => b.state === 'closed', WAIT_MS);
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
    const opened = await openRemote();
    expect(opened.lastError).to.match(/500|failing/);
    expect(opened.consecutiveFailures).to.equal(THRESHOLD);
    const before = { ...remote.calls };
    const p = await purchase();
    expect(p.status).to.equal(200);
    await chargedOnce(p.buyer, 'builtin');
    expect(remote.calls.verify, 'an open breaker is skipped: no call reaches the failing facilitator').to.equal(
      before.verify,
    );
    expect(remote.calls.settle).to.equal(before.settle);
    expect(await balanceOf(chain(), chain().treasury)).to.equal(
      treasuryBefore + BigInt(THRESHOLD + 1) * REGISTRATION_PRICE_ATOMIC,
    );
  });

  it('when the remote facilitator hangs, each request answers within the facilitator timeout plus the fallback, and its breaker opens', async () => {
    // Every buyer is made first: once the breaker opens, the last purchase must be made well
    // within HALF_OPEN_MS, before the breaker's trial.
    const buyers = await prepareMany(THRESHOLD + 1);
    remote.mode = { kind: 'hang' };
    const paid = [];
    for (const ready of buyers.slice(0, THRESHOLD)) {
      const before = remote.calls.verify;
      const p = await pay(ready);
      expect(p.status).to.equal(200);
      expect(remote.calls.verify, 'the request did wait on the hung facilitator').to.equal(before + 1);
      expect(p.ms, 'it costs the request FACILITATOR_TIMEOUT_MS, then the built-in facilitator serves it').to.be.within(
        TIMEOUT_MS,
        3 * TIMEOUT_MS,
      );
      paid.push(p);
    }
    const opened = await remoteBreaker();
    expect(opened.state).to.equal('open');
    expect(opened.lastError).to.match(/timed out/);
    expect(Date.parse(opened.openedAt!), 'opened by the last hung request').to.be.within(
      paid.at(-1)!.startedAt,
      paid.at(-1)!.endedAt,
    );
    const before = { ...remote.calls };
    const p = await pay(buyers[THRESHOLD]!);
    expect(p.status).to.equal(200);
    expect(p.ms, 'an open breaker costs no wait').to.be.below(TIMEOUT_MS);
    expect(remote.calls, 'an open breaker is skipped: no call reaches the hung facilitator').to.deep.equal(before);
    console.log(
      `      hung facilitator: requests answered in ${paid.map((q) => Math.round(q.ms)).join(', ')} ms, then ${Math.round(p.ms)} ms with its breaker open`,
    );
    for (const q of [...paid, p]) await chargedOnce(q.buyer, 'builtin');
  });

  it('when the remote facilitator recovers, its breaker goes half-open and closes by itself without any purchase, and payments return to it', async () => {
    const opened = await openRemote();
    const openedAt = Date.parse(opened.openedAt!);
    // Healthy again, but slow to answer: the trial stays in flight long enough to be seen.
    remote.mode = { kind: 'slow', ms: TRIAL_ANSWER_MS };
    const before = { ...remote.calls };
    const seen = await watchRemote((b) => b.state === 'closed', WAIT_MS);
    expect(
      seen.map((s) => s.state),
      'open, half-open while the trial is in flight, then closed',
    ).to.deep.equal(['open', 'half-open', 'closed']);
    const halfOpenAfter = seen[1]!.at - openedAt;
    const closedAfter = seen[2]!.at - openedAt;
    console.log(
      `      recovered facilitator: half-open seen ${halfOpenAfter} ms and closed ${closedAfter} ms after the breaker opened`,
    );
    expect(halfOpenAfter, 'no trial before FACILITATOR_HALF_OPEN_MS has passed').to.be.at.least(HALF_OPEN_MS);
    expect(halfOpenAfter, 'and the trial comes when due, not a delay later').to.be.below(HALF_OPEN_MS + LATE_MS);
    expect(closedAfter, 'the breaker closes when the trial is answered').to.be.within(
      HALF_OPEN_MS + TRIAL_ANSWER_MS,
      HALF_OPEN_MS + TRIAL_ANSWER_MS + LATE_MS,
    );
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
    const reopened = await eventually(
      async () => {
        const b = await remoteBreaker();
        return b.state === 'open' && Date.parse(b.openedAt!) > firstOpenedAt ? b : undefined;
      },
      WAIT_MS,
      15,
    );
    const firstTrialAfter = Date.parse(reopened.openedAt!) - firstOpenedAt;
    expect(firstTrialAfter, 'no trial before FACILITATOR_HALF_OPEN_MS has passed').to.be.at.least(HALF_OPEN_MS);
    expect(firstTrialAfter, 'and the trial comes when due, not a delay later').to.be.below(HALF_OPEN_MS + LATE_MS);
    expect(remote.calls.supported, 'the failed trial').to.equal(before.supported + 1);
    expect(reopened.lastError).to.match(/500|failing/);

    const p = await purchase();
    expect(p.status).to.equal(200);
    await chargedOnce(p.buyer, 'builtin');

    const again = await eventually(
      async () => {
        const b = await remoteBreaker();
        return b.state === 'open' && Date.parse(b.openedAt!) > Date.parse(reopened.openedAt!) ? b : undefined;
      },
      WAIT_MS,
      15,
    );
    const secondTrialAfter = Date.parse(again.openedAt!) - Date.parse(reopened.openedAt!);
    console.log(
      `      failing trials: the breaker re-opened ${firstTrialAfter} ms, then ${secondTrialAfter} ms after opening`,
    );
    expect(secondTrialAfter, 'no trial before FACILITATOR_HALF_OPEN_MS has passed').to.be.at.least(HALF_OPEN_MS);
    expect(secondTrialAfter, 'and the trial comes when due, not a delay later').to.be.below(HALF_OPEN_MS + LATE_MS);
    expect(remote.calls.supported).to.equal(before.supported + 2);
    expect(remote.calls.verify, 'only trials reached the failing facilitator').to.equal(before.verify);
    expect(remote.calls.settle).to.equal(before.settle);
  });

  it('when the trial hangs, payments do not wait for it, and the timeout re-opens the breaker', async () => {
    const opened = await openRemote();
    const openedAt = Date.parse(opened.openedAt!);
    // Made ahead: the purchase must be made while the trial is in flight.
    const ready = await prepare();
    remote.mode = { kind: 'hang' };
    const seen = await watchRemote((b) => b.state === 'half-open', WAIT_MS);
    const halfOpenSeenAt = seen.at(-1)!.at;
    const before = { ...remote.calls };
    const p = await pay(ready);
    expect(p.status).to.equal(200);
    expect(p.ms, 'the payment did not wait for the trial').to.be.below(TIMEOUT_MS);
    expect(remote.calls.verify, 'nor was it sent to the facilitator on trial').to.equal(before.verify);
    expect(remote.calls.settle).to.equal(before.settle);
    await chargedOnce(p.buyer, 'builtin');
    const reopened = await watchRemote((b) => b.state === 'open', WAIT_MS);
    const b = reopened.at(-1)!.breaker;
    const reopenedAt = Date.parse(b.openedAt!);
    console.log(
      `      hung trial: half-open seen ${halfOpenSeenAt - openedAt} ms after opening, a purchase answered in ${Math.round(p.ms)} ms meanwhile, ` +
        `the breaker re-opened ${reopenedAt - halfOpenSeenAt} ms after half-open was seen`,
    );
    expect(b.lastError).to.match(/timed out/);
    expect(p.endedAt, 'the payment was answered while the trial was still in flight').to.be.below(reopenedAt);
    // Timers and Date.now() both round to the millisecond: a few milliseconds are allowed.
    expect(
      reopenedAt - openedAt,
      'the trial came after FACILITATOR_HALF_OPEN_MS and waited out FACILITATOR_TIMEOUT_MS',
    ).to.be.at.least(HALF_OPEN_MS + TIMEOUT_MS - 5);
    expect(reopenedAt - halfOpenSeenAt, 'and no longer: the trial is bounded by FACILITATOR_TIMEOUT_MS').to.be.below(
      TIMEOUT_MS + LATE_MS,
    );
  });
});
