import { expect } from 'chai';
import { createTestClient, createWalletClient, http, parseAbi, parseEther, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse } from '@x402/core/types';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { balanceOf, newBuyer, type Buyer } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { FacilitatorDouble } from '../support/facilitator-double.js';
import { builtinFacilitator } from '../../src/domain/payments/facilitators/builtin-facilitator.js';
import type { Facilitator } from '../../src/domain/payments/facilitators/facilitator.js';
import { FacilitatorPool } from '../../src/domain/payments/facilitators/pool.js';
import type { FacilitatorRequest } from '../../src/domain/payments/protocol/x402-codec.js';
import {
  resolvePayment,
  StillUnresolvedError,
  type ResolveDeps,
} from '../../src/domain/payments/ledger/resolve-payment.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { usdcAbi } from '../../src/platform/chain/usdc.js';
import { ConfigError, loadConfig } from '../../src/platform/config.js';
import { assertStuckAfterLiveSettlement } from '../../src/bootstrap/settlement-bounds.js';
import { createLogger } from '../../src/platform/logger.js';

const authorizationUsed = parseAbi(['event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)'])[0];

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Where the test holds one settlement of the live request: before it sends, and before it answers. */
interface Hold {
  /** The live request is in its settle call (its payment is `settling`); nothing is sent yet. */
  entered: Deferred<void>;
  /** Lets the settlement send its transaction. */
  send: Deferred<void>;
  /** The settlement's outcome, once its transaction is mined; the answer still waits for `answer`. */
  result: Deferred<SettleResponse>;
  /** Lets the facilitator answer the live request. */
  answer: Deferred<void>;
}

/**
 * The built-in facilitator (settling for real on the test chain), behind gates the test opens, so
 * that the order of the live request's settlement and the retry job's is chosen, not raced.
 */
class GatedFacilitator implements Facilitator {
  readonly name = 'gated-builtin';
  readonly kind = 'builtin' as const;
  readonly settleVerifies = true;
  private next: Hold | undefined;

  constructor(private readonly inner: Facilitator) {}

  /** Holds the next settlement. */
  hold(): Hold {
    const h: Hold = { entered: deferred(), send: deferred(), result: deferred<SettleResponse>(), answer: deferred() };
    this.next = h;
    return h;
  }

  verify(request: FacilitatorRequest) {
    return this.inner.verify(request);
  }

  async settle(request: FacilitatorRequest): Promise<SettleResponse> {
    const h = this.next;
    this.next = undefined;
    if (!h) return this.inner.settle(request);
    h.entered.resolve();
    await h.send.promise;
    try {
      const result = await this.inner.settle(request);
      h.result.resolve(result);
    } catch (err) {
      h.result.reject(err);
      throw err;
    }
    await h.answer.promise;
    return h.result.promise;
  }

  supported() {
    return this.inner.supported();
  }

  ping() {
    return this.inner.ping();
  }
}

/** A facilitator for the retry job whose settle the test writes. */
function retryFacilitator(settle: (p: PaymentPayload, r: PaymentRequirements) => Promise<SettleResponse>): Facilitator {
  return {
    name: 'retry-facilitator',
    kind: 'remote',
    settleVerifies: false,
    verify: async () => {
      throw new Error('the retry job only settles');
    },
    settle: async (request) => {
      if (request.x402Version !== 2) throw new Error('the payments of these tests are x402 v2');
      return settle(request.payload, request.requirements);
    },
    supported: async () => ({ kinds: [], extensions: [], signers: {} }) as SupportedResponse,
    ping: async () => undefined,
  };
}

/**
 * The retry job (or the reconciler, or `ops.ts settle`) takes a payment that a live request is
 * still settling, and its own settle fails otherwise than "nonce already used". The ledger must
 * end as the chain does: the payment settled once, with the transaction that used the
 * authorization, its effect written once, and the live request answered with what was bought.
 */
describe('settlement race: the retry job and a live request settle the same payment', function () {
  this.timeout(60_000);
  let devChain: DevChain;
  let gated: GatedFacilitator;
  let double: FacilitatorDouble;
  let svc: TestService;
  let handleNo = 0;
  const holds: Hold[] = [];
  const pools: FacilitatorPool[] = [];
  const chain = () => svc.service.runtime.chain;
  const db = () => svc.service.runtime.database.db;
  const testClient = () => createTestClient({ mode: 'anvil', chain: devChain.chain, transport: http(devChain.rpcUrl) });

  before(async () => {
    devChain = await startDevChain();
    gated = new GatedFacilitator(
      builtinFacilitator({
        rpcUrl: devChain.rpcUrl,
        chain: localChain(devChain.chainId, devChain.rpcUrl),
        privateKey: devChain.accounts.facilitator.privateKey,
        pollingIntervalMs: 10,
      }),
    );
    double = await new FacilitatorDouble(gated).start();
    svc = await startTestService({
      RPC_URL: devChain.rpcUrl,
      CHAIN_ID: String(devChain.chainId),
      USDC_ADDRESS: devChain.usdc.address,
      IDENTITY_REGISTRY_ADDRESS: devChain.identityRegistry,
      TREASURY_ADDRESS: devChain.accounts.treasury.address,
      FACILITATOR_BUILTIN: 'false',
      FACILITATOR_URLS: double.url,
      // Long enough that a held answer is still an answer, not an unknown outcome.
      FACILITATOR_TIMEOUT_MS: '30000',
    });
    // A configured chain has no faucet; the test mints through the dev chain directly.
    (svc.service.runtime.chain as { faucet?: unknown }).faucet = devChain.faucet;
  });

  afterEach(async () => {
    // A failed assertion must not leave a request waiting at a gate, nor the chain without mining.
    for (const h of holds.splice(0)) {
      h.send.resolve();
      h.answer.resolve();
    }
    for (const p of pools.splice(0)) p.close();
    if (devChain) await testClient().setAutomine(true);
  });

  after(async () => {
    await svc?.stop();
    await double?.stop();
    await devChain?.stop();
  });

  function retryJob(settle: (p: PaymentPayload, r: PaymentRequirements) => Promise<SettleResponse>): ResolveDeps {
    const facilitators = new FacilitatorPool([retryFacilitator(settle)]);
    pools.push(facilitators);
    return {
      db: db(),
      facilitators,
      settlementEffects: svc.service.runtime.settlementEffects,
      publicClient: devChain.publicClient,
      log: createLogger('silent'),
    };
  }

  /** Starts a registration whose settlement is held by the facilitator; resolves once it is `settling`. */
  async function liveRegistration() {
    const buyer = await newBuyer(chain());
    const handle = `race-${++handleNo}-${Date.now().toString(36)}`;
    const body = await signedVerifyBody(svc.url, buyer.account, handle);
    const hold = gated.hold();
    holds.push(hold);
    const response = postVerify(svc.url, body, buyer.payV2);
    const first = await Promise.race([
      hold.entered.promise.then(() => 'settling' as const),
      response.then((r) => r.status),
    ]);
    if (first !== 'settling') throw new Error(`the registration was answered ${first} before it was settled`);
    const payment = await db()
      .selectFrom('payments')
      .selectAll()
      .where('payer', '=', buyer.address.toLowerCase())
      .executeTakeFirstOrThrow();
    expect(payment.status, 'the live request is settling it').to.equal('settling');
    return { buyer, handle, hold, response, payment };
  }

  /** What the chain holds for a buyer's registration, against what the ledger says. */
  async function expectLedgerEqualsChain(buyer: Buyer, paymentId: string, liveTx: Hex) {
    const payment = await db().selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
    const uses = await devChain.publicClient.getLogs({
      address: devChain.usdc.address,
      event: authorizationUsed,
      args: { authorizer: buyer.address, nonce: payment.nonce as Hex },
      fromBlock: 0n,
      toBlock: 'latest',
    });
    expect(
      uses.map((l) => l.transactionHash),
      'the authorization was used once, by the live settlement',
    ).to.deep.equal([liveTx]);
    expect(payment.status).to.equal('settled');
    expect(payment.tx_hash?.toLowerCase(), 'settled with the transaction that used the authorization').to.equal(
      liveTx.toLowerCase(),
    );
    expect(payment.failure_reason).to.equal(null);
    expect(await balanceOf(chain(), buyer.address), 'charged once').to.equal(9_000_000n);
    const agents = await db()
      .selectFrom('agents')
      .select(['id', 'registration_payment_id'])
      .where('wallet_address', '=', buyer.address.toLowerCase())
      .execute();
    expect(agents, 'the agent it paid for exists once').to.deep.equal([
      { id: payment.agent_id, registration_payment_id: paymentId },
    ]);
    const payments = await db()
      .selectFrom('payments')
      .select('id')
      .where('payer', '=', buyer.address.toLowerCase())
      .execute();
    expect(payments.map((p) => p.id)).to.deep.equal([paymentId]);
    return payment;
  }

  it("when the retry job settles a payment again while the live request's transaction is being mined, and its own transaction reverts, the payment is settled with the live one and the buyer gets the agent", async () => {
    const { buyer, handle, hold, response, payment } = await liveRegistration();
    const racer = privateKeyToAccount(generatePrivateKey());
    await testClient().setBalance({ address: racer.address, value: parseEther('1') });
    const racerWallet = createWalletClient({ account: racer, chain: devChain.chain, transport: http(devChain.rpcUrl) });
    let reverted: Hex | undefined;

    // The job reads the authorization as unused (the live settlement has sent nothing yet), then
    // settles it again; the live transaction is mined first, so the job's own one reverts.
    const resolution = await resolvePayment(
      retryJob(async (p, r) => {
        hold.send.resolve();
        await hold.result.promise;
        const { authorization: a, signature } = p.payload as { authorization: Record<string, string>; signature: Hex };
        reverted = await racerWallet.writeContract({
          address: devChain.usdc.address,
          abi: usdcAbi,
          functionName: 'transferWithAuthorization',
          args: [a.from, a.to, BigInt(a.value!), BigInt(a.validAfter!), BigInt(a.validBefore!), a.nonce, signature],
          // A fixed gas limit sends it without an estimate, which would refuse it.
          gas: 200_000n,
        });
        await devChain.publicClient.waitForTransactionReceipt({ hash: reverted });
        return {
          success: false,
          errorReason: 'invalid_exact_evm_transaction_failed',
          transaction: reverted,
          network: r.network,
          payer: a.from,
        };
      }),
      payment.id,
    );
    const recorded = await db()
      .selectFrom('payments')
      .select(['status', 'tx_hash'])
      .where('id', '=', payment.id)
      .executeTakeFirstOrThrow();
    // Only now does the live request get its facilitator's answer.
    hold.answer.resolve();
    const res = await response;
    const text = await res.text();
    const live = await hold.result.promise;

    expect(
      (await devChain.publicClient.getTransactionReceipt({ hash: reverted! })).status,
      "the job's own transaction",
    ).to.equal('reverted');
    expect({ resolution, ...recorded, answered: res.status }, text).to.deep.equal({
      resolution: 'settled',
      status: 'settled',
      tx_hash: live.transaction,
      answered: 200,
    });
    const body = JSON.parse(text);
    expect(body.paymentId).to.equal(payment.id);
    expect(body.agent.handle).to.equal(handle);
    expect(decodePaymentResponseHeader(res.headers.get('payment-response')!).transaction).to.equal(live.transaction);
    const settled = await expectLedgerEqualsChain(buyer, payment.id, live.transaction as Hex);
    expect(body.agent.id).to.equal(settled.agent_id);
  });

  it('when the retry job fails to settle without a transaction while the live one waits unmined, the payment stays in flight, the live request settles it once mined and the buyer gets the agent', async () => {
    const { buyer, handle, hold, response, payment } = await liveRegistration();
    const sender = devChain.accounts.facilitator.address;
    const test = testClient();

    // The job's settle fails without naming a transaction while the live one sits in the mempool:
    // the chain still reads the authorization as unused, but a transaction may yet be mined, so the
    // payment is not failed; the chain decides.
    const retried = await resolvePayment(
      retryJob(async (p, r) => {
        await test.setAutomine(false);
        const mined = await devChain.publicClient.getTransactionCount({ address: sender });
        hold.send.resolve();
        await eventually(
          async () =>
            (await devChain.publicClient.getTransactionCount({ address: sender, blockTag: 'pending' })) > mined,
          10_000,
          10,
        );
        const a = (p.payload as { authorization: { from: string } }).authorization;
        return {
          success: false,
          errorReason: 'invalid_exact_evm_transaction_failed',
          transaction: '',
          network: r.network,
          payer: a.from,
        };
      }),
      payment.id,
    ).then(
      () => 'resolved',
      (err: unknown) => (err instanceof StillUnresolvedError ? 'left for the chain' : err),
    );
    expect(retried).to.equal('left for the chain');
    expect(
      (await db().selectFrom('payments').select('status').where('id', '=', payment.id).executeTakeFirstOrThrow())
        .status,
    ).to.equal('settling');

    // The live transaction is mined: its facilitator answers success, and the chain is the truth.
    await test.setAutomine(true);
    await test.mine({ blocks: 1 });
    hold.answer.resolve();
    const res = await response;
    const text = await res.text();
    const live = await hold.result.promise;

    expect(live.success).to.equal(true);
    expect(res.status, text).to.equal(200);
    const body = JSON.parse(text);
    expect(body.paymentId).to.equal(payment.id);
    expect(body.agent.handle).to.equal(handle);
    const settled = await expectLedgerEqualsChain(buyer, payment.id, live.transaction as Hex);
    expect(body.agent.id).to.equal(settled.agent_id);
    // Resolved again, it stays as the chain has it.
    expect(
      await resolvePayment(
        retryJob(async () => Promise.reject(new Error('not settled again'))),
        payment.id,
      ),
    ).to.equal('unchanged');
  });

  it('a stuck threshold that a live settlement may outlast is refused at start', () => {
    const remote = {
      FACILITATOR_URLS: 'http://facilitator.test',
      FACILITATOR_BUILTIN: 'false',
      FACILITATOR_TIMEOUT_MS: '1500',
    };
    const refused = (env: Record<string, string>) => {
      try {
        assertStuckAfterLiveSettlement(loadConfig(env));
      } catch (err) {
        return err;
      }
      return undefined;
    };
    for (const env of <Array<Record<string, string>>>[
      { ...remote, PAYMENTS_STUCK_AFTER_MS: '1000' },
      { ...remote, PAYMENTS_STUCK_AFTER_MS: '2500' },
      { PAYMENTS_STUCK_AFTER_MS: '2000' },
      { PAYMENTS_STUCK_AFTER_MS: '41000' },
      { ...remote, FACILITATOR_BUILTIN: 'true', PAYMENTS_STUCK_AFTER_MS: '30000' },
      { ...remote, FACILITATOR_TIMEOUT_MS: '90000' },
    ]) {
      const err = refused(env);
      expect(err, JSON.stringify(env)).to.be.instanceOf(ConfigError);
      expect((err as ConfigError).problems).to.have.length(1);
      expect((err as ConfigError).problems[0]).to.match(/^PAYMENTS_STUCK_AFTER_MS/);
    }
    for (const env of [{ ...remote, PAYMENTS_STUCK_AFTER_MS: '2501' }, { PAYMENTS_STUCK_AFTER_MS: '41001' }]) {
      const config = loadConfig(env);
      expect(() => assertStuckAfterLiveSettlement(config)).not.to.throw();
      expect(config.paymentsStuckAfterMs).to.equal(Number(env.PAYMENTS_STUCK_AFTER_MS));
    }
    expect(loadConfig({}).paymentsStuckAfterMs, 'the default').to.equal(60_000);
  });
});
