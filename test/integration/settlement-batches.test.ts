import { expect } from 'chai';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  http,
  parseAbi,
  parseEther,
  parseGwei,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { claimPayment } from '../../src/data/payments.repository.js';
import type { Db } from '../../src/data/db.js';
import { finalizeSettlement } from '../../src/domain/payments/ledger/settlement.js';
import type { PaymentRequirements, SettleResponse } from '@x402/core/types';
import { BatchSettler } from '../../src/domain/payments/facilitators/batch-settler.js';
import { NotSentError } from '../../src/domain/payments/facilitators/facilitator.js';
import { batchableTransfer, REASONS } from '../../src/domain/payments/protocol/eip3009.js';
import type { FacilitatorRequest } from '../../src/domain/payments/protocol/x402-codec.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { chainHandleOf } from '../support/topology.js';
import { balanceOf, newBuyer, signAuthorization, v2Header, wire } from '../support/buyers.js';
import { registerAgent } from '../support/agents.js';
import { skillBody } from '../support/skills.js';
import { testClient } from '../support/anvil.js';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { localChain } from '../../src/platform/chain/clients.js';
import { eventually, settledPayment, startTestService, type TestService } from '../support/service.js';
import type { ChainHandle } from '../../src/platform/blockchain.js';

const PRICE = 10_000n;

/** A promise and the functions that settle it. */
function deferred() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
const TOKEN = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
]);

describe('settlement batches: many authorizations per transaction, each paid once or refused on its own', function () {
  this.timeout(120_000);
  let devChain: DevChain;
  let chain: ChainHandle;
  let payTo: Address;
  let settler: BatchSettler;
  let anvil: ReturnType<typeof createTestClient>;
  const facilitator = () => devChain.accounts.facilitator;

  const requirements = (): PaymentRequirements => ({
    scheme: 'exact',
    network: `eip155:${chain.chainId}`,
    asset: chain.usdc.address,
    amount: PRICE.toString(),
    payTo,
    maxTimeoutSeconds: 60,
    extra: { name: chain.usdc.name, version: chain.usdc.version },
  });

  /** A facilitator request for an authorization signed by a buyer, as the paywall hands it over. */
  const requestOf = (signed: Awaited<ReturnType<typeof signAuthorization>>): FacilitatorRequest => {
    const authorization = wire(signed.authorization);
    return {
      x402Version: 2,
      payload: { x402Version: 2, accepted: requirements(), payload: { authorization, signature: signed.signature } },
      requirements: requirements(),
    };
  };

  const settle = (signed: Awaited<ReturnType<typeof signAuthorization>>): Promise<SettleResponse> => {
    const transfer = batchableTransfer(requestOf(signed));
    if (!transfer) throw new Error('not a batchable authorization');
    return settler.settle(transfer);
  };

  const funded = async (usdc = 1_000_000n) => {
    const account = privateKeyToAccount(generatePrivateKey());
    if (usdc > 0n) await chain.faucet!(account.address, usdc);
    return account;
  };

  const used = (from: Address, nonce: Hex) =>
    devChain.publicClient.readContract({
      address: chain.usdc.address,
      abi: TOKEN,
      functionName: 'authorizationState',
      args: [from, nonce],
    });

  /** The facilitator's transactions sent and not yet mined. */
  const pendingCount = async () => {
    const address = facilitator().address;
    const [pending, latest] = await Promise.all([
      devChain.publicClient.getTransactionCount({ address, blockTag: 'pending' }),
      devChain.publicClient.getTransactionCount({ address, blockTag: 'latest' }),
    ]);
    return pending - latest;
  };

  /** Resolves the next time a batch's simulation has answered. */
  let simulated: () => Promise<void> = async () => undefined;

  const newSettler = (confirmationTimeoutMs = 30_000, maxQueueWaitMs?: number, recordWaitMs?: number) => {
    const account = privateKeyToAccount(facilitator().privateKey);
    const chainClient = createPublicClient({ chain: devChain.chain, transport: http(devChain.rpcUrl) });
    let answered: Array<() => void> = [];
    simulated = () => new Promise((resolve) => answered.push(resolve));
    // The batch simulates with `call`: the tests wait on its answer, not on a clock.
    const client = new Proxy(chainClient, {
      get: (target, key, receiver) =>
        key === 'call'
          ? async (...args: Parameters<typeof chainClient.call>) => {
              const out = await target.call(...args);
              const waiting = answered;
              answered = [];
              for (const resolve of waiting) resolve();
              return out;
            }
          : Reflect.get(target, key, receiver),
    });
    const sender = createWalletClient({
      account,
      chain: devChain.chain,
      transport: http(devChain.rpcUrl, { retryCount: 0 }),
    });
    return new BatchSettler({
      chain: devChain.chain,
      account,
      client,
      sendRawTransaction: (serializedTransaction) => sender.sendRawTransaction({ serializedTransaction }),
      fees: async () => {
        const f = await client.estimateFeesPerGas();
        return { maxFeePerGas: f.maxFeePerGas!, maxPriorityFeePerGas: f.maxPriorityFeePerGas! };
      },
      maxBatch: 50,
      pollingIntervalMs: 10,
      confirmationTimeoutMs,
      maxQueueWaitMs,
      recordWaitMs,
    });
  };

  before(async () => {
    devChain = await startDevChain();
    chain = chainHandleOf(devChain);
    payTo = devChain.accounts.treasury.address;
    anvil = createTestClient({ mode: 'anvil', chain: devChain.chain, transport: http(devChain.rpcUrl) });
    settler = newSettler();
  });

  after(async () => {
    await devChain?.stop();
  });

  afterEach(async () => {
    await anvil.setAutomine(true);
  });

  it('settles authorizations that arrive together in shared transactions, each one transfer, each answered with its transaction', async () => {
    const buyers = await Promise.all(Array.from({ length: 12 }, () => funded()));
    const before = await balanceOf(chain, payTo);
    const signed = await Promise.all(buyers.map((b) => signAuthorization(b, chain, { to: payTo, value: PRICE })));
    const results = await Promise.all(signed.map(settle));
    expect(results.map((r) => r.success)).to.deep.equal(buyers.map(() => true));
    const transactions = new Set(results.map((r) => r.transaction));
    // The first authorization leaves alone; those that came while it was sent share the next one.
    expect(transactions.size).to.be.at.most(3);
    for (const [i, r] of results.entries()) {
      expect(r.payer).to.equal(buyers[i]!.address);
      const receipt = await devChain.publicClient.getTransactionReceipt({ hash: r.transaction as Hex });
      expect(receipt.status).to.equal('success');
    }
    expect(await balanceOf(chain, payTo)).to.equal(before + 12n * PRICE);
    for (const b of buyers) expect(await balanceOf(chain, b.address)).to.equal(1_000_000n - PRICE);
  });

  it('a batch with a bad signature, an expired, an already used and an unfunded authorization settles the rest and refuses each with its reason', async () => {
    const good = await Promise.all(Array.from({ length: 4 }, () => funded()));
    const [forged, expired, spent] = await Promise.all([funded(), funded(), funded()]);
    const broke = await funded(0n);
    const stranger = privateKeyToAccount(generatePrivateKey());
    const before = await balanceOf(chain, payTo);

    const goodSigned = await Promise.all(good.map((b) => signAuthorization(b, chain, { to: payTo, value: PRICE })));
    // Signed by another key in the name of a funded buyer.
    const forgedSigned = await signAuthorization(stranger, chain, { to: payTo, value: PRICE, from: forged.address });
    const now = BigInt(Math.floor(Date.now() / 1000));
    const expiredSigned = await signAuthorization(expired, chain, { to: payTo, value: PRICE, validBefore: now - 1n });
    const spentSigned = await signAuthorization(spent, chain, { to: payTo, value: PRICE });
    const brokeSigned = await signAuthorization(broke, chain, { to: payTo, value: PRICE });
    // The used one was already submitted by someone else, straight to the token.
    await submitDirectly(spentSigned);

    const all = [
      goodSigned[0]!,
      forgedSigned,
      goodSigned[1]!,
      expiredSigned,
      spentSigned,
      goodSigned[2]!,
      brokeSigned,
      goodSigned[3]!,
    ];
    const results = await Promise.all(all.map(settle));
    const reasons = results.map((r) => (r.success ? 'settled' : r.errorReason));
    expect(reasons).to.deep.equal([
      'settled',
      REASONS.signature,
      'settled',
      REASONS.validBefore,
      REASONS.nonceUsed,
      'settled',
      REASONS.balance,
      'settled',
    ]);
    for (const r of results.filter((r) => !r.success)) expect(r.transaction).to.equal('');
    // Four sales and the one submitted directly; nothing else moved.
    expect(await balanceOf(chain, payTo)).to.equal(before + 5n * PRICE);
    expect(await balanceOf(chain, forged.address)).to.equal(1_000_000n);
    expect(await balanceOf(chain, expired.address)).to.equal(1_000_000n);
    expect(await balanceOf(chain, spent.address)).to.equal(1_000_000n - PRICE);
  });

  it('an authorization used by another transaction between simulation and mining fails inside the batch alone: the others are settled, it is answered pending, and it is charged once', async () => {
    const buyers = await Promise.all(Array.from({ length: 4 }, () => funded()));
    const before = await balanceOf(chain, payTo);
    const signed = await Promise.all(buyers.map((b) => signAuthorization(b, chain, { to: payTo, value: PRICE })));
    await anvil.setAutomine(false);
    // Two settle calls: the first leaves in its own batch; the other three in the next. Only the
    // first is held back from mining here: it is the one front-run.
    const first = settle(signed[0]!);
    await eventually(async () => (await pendingCount()) === 1, 10_000, 10);
    // Someone submits the first authorization themselves, paying more for priority: mined first.
    await submitDirectly(signed[0]!, parseGwei('50'));
    await anvil.mine({ blocks: 1 });
    await anvil.setAutomine(true);
    const rest = await Promise.all(signed.slice(1).map(settle));
    const firstResult = await first;
    expect(firstResult.success).to.equal(false);
    expect(firstResult.errorReason).to.equal(REASONS.pending);
    expect(firstResult.transaction).to.match(/^0x[0-9a-f]{64}$/);
    const batch = await devChain.publicClient.getTransactionReceipt({ hash: firstResult.transaction as Hex });
    // Mined, and not reverted: its failed transfer did not take the batch down.
    expect(batch.status).to.equal('success');
    expect(rest.every((r) => r.success)).to.equal(true);
    expect(await used(buyers[0]!.address, signed[0]!.authorization.nonce)).to.equal(true);
    expect(await balanceOf(chain, payTo)).to.equal(before + 4n * PRICE);
    for (const b of buyers) expect(await balanceOf(chain, b.address)).to.equal(1_000_000n - PRICE);
  });

  it('a dropped batch transaction is answered pending, its authorization stays unused, and settling it again charges once without a gap in the nonces', async () => {
    const quick = newSettler(1500);
    const buyer = await funded();
    const other = await funded();
    const before = await balanceOf(chain, payTo);
    const signed = await signAuthorization(buyer, chain, { to: payTo, value: PRICE });
    await anvil.setAutomine(false);
    const transfer = batchableTransfer(requestOf(signed))!;
    const answer = quick.settle(transfer);
    await eventually(async () => (await pendingCount()) === 1, 10_000, 10);
    const [hash] = await pendingHashes();
    await anvil.dropTransaction({ hash: hash! });
    const dropped = await answer;
    expect(dropped.success).to.equal(false);
    expect(dropped.errorReason).to.equal(REASONS.pending);
    expect(dropped.transaction).to.equal(hash);
    expect(await used(buyer.address, signed.authorization.nonce)).to.equal(false);
    await anvil.setAutomine(true);
    // What the retry job does once the chain says "unused": settle it again.
    const again = await quick.settle(transfer);
    expect(again.success).to.equal(true);
    expect(await used(buyer.address, signed.authorization.nonce)).to.equal(true);
    // The next batch is not stuck behind the dropped transaction's nonce.
    const next = await quick.settle(
      batchableTransfer(requestOf(await signAuthorization(other, chain, { to: payTo, value: PRICE })))!,
    );
    expect(next.success).to.equal(true);
    expect(await balanceOf(chain, payTo)).to.equal(before + 2n * PRICE);
    expect(await balanceOf(chain, buyer.address)).to.equal(1_000_000n - PRICE);
  });

  it('a batch transaction replaced at its nonce is answered pending without waiting out the timeout, and settling it again charges once', async () => {
    const buyer = await funded();
    const before = await balanceOf(chain, payTo);
    const signed = await signAuthorization(buyer, chain, { to: payTo, value: PRICE });
    await anvil.setAutomine(false);
    const transfer = batchableTransfer(requestOf(signed))!;
    const started = Date.now();
    const answer = settler.settle(transfer);
    await eventually(async () => (await pendingCount()) === 1, 10_000, 10);
    const [hash] = await pendingHashes();
    const pending = await devChain.publicClient.getTransaction({ hash: hash! });
    // The same key sends something else at that nonce, paying more: the node replaces the batch.
    const account = privateKeyToAccount(facilitator().privateKey);
    const wallet = createWalletClient({ account, chain: devChain.chain, transport: http(devChain.rpcUrl) });
    await wallet.sendTransaction({
      to: account.address,
      value: 0n,
      nonce: pending.nonce,
      maxFeePerGas: parseGwei('100'),
      maxPriorityFeePerGas: parseGwei('60'),
    });
    await anvil.mine({ blocks: 1 });
    const replaced = await answer;
    expect(replaced.success).to.equal(false);
    expect(replaced.errorReason).to.equal(REASONS.pending);
    expect(Date.now() - started).to.be.below(10_000);
    expect(await used(buyer.address, signed.authorization.nonce)).to.equal(false);
    await anvil.setAutomine(true);
    const again = await settler.settle(transfer);
    expect(again.success).to.equal(true);
    expect(await balanceOf(chain, payTo)).to.equal(before + PRICE);
    expect(await balanceOf(chain, buyer.address)).to.equal(1_000_000n - PRICE);
  });

  it('the same authorization asked for twice while the first is queued or in flight shares one answer and one transfer', async () => {
    const buyer = await funded();
    const before = await balanceOf(chain, payTo);
    const signed = await signAuthorization(buyer, chain, { to: payTo, value: PRICE });
    // A retry job overlapping the live request: both ask to settle the same authorization at once.
    const [first, second] = await Promise.all([settle(signed), settle(signed)]);
    expect(first.success).to.equal(true);
    expect(second).to.deep.equal(first);
    expect(await balanceOf(chain, payTo)).to.equal(before + PRICE);
    expect(await balanceOf(chain, buyer.address)).to.equal(1_000_000n - PRICE);
  });

  it('copies of one request, each with its own claim, are sent once whichever of them won the claim, and not at all when none did', async () => {
    const buyers = await Promise.all(Array.from({ length: 2 }, () => funded()));
    const first = await signAuthorization(buyers[0]!, chain, { to: payTo, value: PRICE });
    const second = await signAuthorization(buyers[1]!, chain, { to: payTo, value: PRICE });
    const before = await balanceOf(chain, payTo);
    const transfer = (s: typeof first) => batchableTransfer(requestOf(s))!;
    // The copy that asked first lost the claim; the one that won asks after its refusal is known.
    const lost = Promise.reject(new Error('claimed by another request'));
    lost.catch(() => undefined);
    const won = deferred();
    const answers = [settler.settle(transfer(first), lost), settler.settle(transfer(first), won.promise)];
    await Promise.resolve();
    won.resolve();
    const [a, b] = await Promise.all(answers);
    expect(a?.success).to.equal(true);
    expect(b).to.deep.equal(a);
    // Every copy's claim failed: none is sent.
    const refused = [new Error('claimed elsewhere'), new Error('the database went away')].map((err) => {
      const p = Promise.reject(err);
      p.catch(() => undefined);
      return p;
    });
    const unsent = await Promise.all(
      refused.map((r) =>
        settler.settle(transfer(second), r).then(
          () => undefined,
          (err: unknown) => err,
        ),
      ),
    );
    for (const err of unsent) expect(err).to.be.instanceOf(NotSentError);
    expect(await used(buyers[1]!.address, second.authorization.nonce)).to.equal(false);
    expect(await balanceOf(chain, payTo)).to.equal(before + PRICE);
  });

  it('an authorization forged over a real one (same payer and nonce, another signature or validity window) is refused on its own, and the real one is paid once', async () => {
    const buyer = await funded();
    const before = await balanceOf(chain, payTo);
    const real = await signAuthorization(buyer, chain, { to: payTo, value: PRICE });
    const flipped = (Number.parseInt(real.signature.slice(10, 12), 16) ^ 0xff).toString(16).padStart(2, '0');
    const forged = { ...real, signature: `${real.signature.slice(0, 10)}${flipped}${real.signature.slice(12)}` as Hex };
    // The real signature under another validity window: not the authorization its payer signed.
    const stretched = {
      ...real,
      authorization: { ...real.authorization, validBefore: real.authorization.validBefore - 60n },
    };
    const [refused, alsoRefused, paid] = await Promise.all([settle(forged), settle(stretched), settle(real)]);
    expect(refused).to.include({ success: false, errorReason: REASONS.signature });
    expect(alsoRefused).to.include({ success: false, errorReason: REASONS.signature });
    expect(paid.success).to.equal(true);
    expect(await balanceOf(chain, payTo)).to.equal(before + PRICE);
  });

  it('an authorization that waited too long for its batch is answered pending and not sent', async () => {
    // Waiting more than a millisecond is too long here: those queued while the first batch is sent.
    const impatient = newSettler(30_000, 1);
    const buyers = await Promise.all(Array.from({ length: 3 }, () => funded()));
    const signed = await Promise.all(buyers.map((b) => signAuthorization(b, chain, { to: payTo, value: PRICE })));
    const before = await balanceOf(chain, payTo);
    const first = impatient.settle(batchableTransfer(requestOf(signed[0]!))!);
    const later = signed.slice(1).map((s) => impatient.settle(batchableTransfer(requestOf(s))!));
    expect((await first).success).to.equal(true);
    for (const answer of await Promise.all(later)) {
      expect(answer).to.include({ success: false, errorReason: REASONS.pending, transaction: '' });
    }
    for (const [i, b] of buyers.entries()) {
      expect(await used(b.address, signed[i]!.authorization.nonce)).to.equal(i === 0);
    }
    expect(await balanceOf(chain, payTo)).to.equal(before + PRICE);
  });

  it('a batch is simulated while its payments are being recorded and sent once they are; one whose record fails is not sent', async () => {
    const recording = newSettler();
    const buyers = await Promise.all(Array.from({ length: 2 }, () => funded()));
    const signed = await Promise.all(buyers.map((b) => signAuthorization(b, chain, { to: payTo, value: PRICE })));
    const before = await balanceOf(chain, payTo);
    const [recorded, failed] = [deferred(), deferred()];
    // As the paywall does: a record that fails is observed where it is made.
    failed.promise.catch(() => undefined);
    const simulation = simulated();
    const answers = signed.map((s, i) =>
      recording.settle(batchableTransfer(requestOf(s))!, (i === 0 ? recorded : failed).promise),
    );
    await simulation;
    // Simulated, and nothing sent while the records are being written.
    expect(await pendingCount()).to.equal(0);
    expect(await used(buyers[0]!.address, signed[0]!.authorization.nonce)).to.equal(false);
    failed.reject(new Error('the database went away'));
    recorded.resolve();
    const unsent = await answers[1]!.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(unsent).to.be.instanceOf(NotSentError);
    expect((await answers[0]!).success).to.equal(true);
    expect(await used(buyers[1]!.address, signed[1]!.authorization.nonce)).to.equal(false);
    expect(await balanceOf(chain, payTo)).to.equal(before + PRICE);
  });

  it('a payment recorded after its batch stopped waiting goes to the next batch, and is paid once', async () => {
    const patient = newSettler(30_000, undefined, 20);
    const buyers = await Promise.all(Array.from({ length: 2 }, () => funded()));
    const signed = await Promise.all(buyers.map((b) => signAuthorization(b, chain, { to: payTo, value: PRICE })));
    const before = await balanceOf(chain, payTo);
    const slow = deferred();
    const late = patient.settle(batchableTransfer(requestOf(signed[0]!))!, slow.promise);
    const onTime = await patient.settle(batchableTransfer(requestOf(signed[1]!))!, Promise.resolve());
    // The first batch went without it; it is recorded only now.
    expect(onTime.success).to.equal(true);
    expect(await used(buyers[0]!.address, signed[0]!.authorization.nonce)).to.equal(false);
    slow.resolve();
    const answer = await late;
    expect(answer.success).to.equal(true);
    expect(answer.transaction).to.not.equal(onTime.transaction);
    expect(await balanceOf(chain, payTo)).to.equal(before + 2n * PRICE);
  });

  it('a payment whose record is slow holds back one batch once: later batches go without it, and it is paid once recorded', async () => {
    const patient = newSettler(30_000, undefined, 2_000);
    const buyers = await Promise.all(Array.from({ length: 2 }, () => funded()));
    const signed = await Promise.all(buyers.map((b) => signAuthorization(b, chain, { to: payTo, value: PRICE })));
    const before = await balanceOf(chain, payTo);
    const slow = deferred();
    const simulation = simulated();
    const late = patient.settle(batchableTransfer(requestOf(signed[0]!))!, slow.promise);
    // Its batch is simulated and waits for its record; another payment arrives meanwhile.
    await simulation;
    const arrived = performance.now();
    const onTime = await patient.settle(batchableTransfer(requestOf(signed[1]!))!, Promise.resolve());
    expect(onTime.success).to.equal(true);
    // Behind the first batch's wait (2 s) only, not a second one for the same slow record.
    expect(performance.now() - arrived).to.be.below(3_500);
    expect(await used(buyers[0]!.address, signed[0]!.authorization.nonce)).to.equal(false);
    slow.resolve();
    expect((await late).success).to.equal(true);
    expect(await balanceOf(chain, payTo)).to.equal(before + 2n * PRICE);
  });

  it('leaves what it cannot batch to the official scheme: a signature that is not 65 bytes is not batchable', async () => {
    const buyer = await funded();
    const signed = await signAuthorization(buyer, chain, { to: payTo, value: PRICE });
    const request = requestOf({ ...signed, signature: `${signed.signature}00` as Hex });
    expect(batchableTransfer(request)).to.equal(undefined);
    expect(batchableTransfer(requestOf(signed))).to.not.equal(undefined);
  });

  /** The hashes of the facilitator's transactions waiting in the node's pool. */
  async function pendingHashes(): Promise<Hex[]> {
    const pool = await anvil.getTxpoolContent();
    const mine = Object.entries(pool.pending).find(
      ([from]) => from.toLowerCase() === facilitator().address.toLowerCase(),
    );
    return mine ? Object.values(mine[1]).map((tx) => tx.hash) : [];
  }

  /** Submits an authorization to the token from an account of its own (anyone may). */
  async function submitDirectly(signed: Awaited<ReturnType<typeof signAuthorization>>, priority?: bigint) {
    const submitter = privateKeyToAccount(generatePrivateKey());
    await anvil.setBalance({ address: submitter.address, value: parseEther('1') });
    const wallet = createWalletClient({ account: submitter, chain: devChain.chain, transport: http(devChain.rpcUrl) });
    const a = signed.authorization;
    const sig = signed.signature;
    const hash = await wallet.writeContract({
      address: chain.usdc.address,
      abi: TOKEN,
      functionName: 'transferWithAuthorization',
      args: [
        a.from,
        a.to,
        a.value,
        a.validAfter,
        a.validBefore,
        a.nonce,
        Number.parseInt(sig.slice(130, 132), 16),
        `0x${sig.slice(2, 66)}`,
        `0x${sig.slice(66, 130)}`,
      ],
      // A fixed limit: an estimate against the node's pending state would see the batch's use of it.
      gas: 200_000n,
      ...(priority ? { maxPriorityFeePerGas: priority, maxFeePerGas: priority * 2n } : {}),
    });
    if (!priority) await devChain.publicClient.waitForTransactionReceipt({ hash });
    return hash;
  }
});

describe('settlement batches through the service: the chain decides, the ledger follows', function () {
  this.timeout(120_000);
  let svc: TestService;
  const chain = () => svc.service.runtime.chain;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc?.stop();
  });

  /** A seller's skill published at PRICE, and a funded buyer's authorization to pay for it. */
  async function skillOnSale(handle: string, skill: string) {
    const seller = await registerAgent(svc, handle);
    const post = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: {
          title: `Skill ${skill}`,
          preview: 'preview',
          body: skillBody(skill, '# first'),
          priceAtomic: `${PRICE}`,
        },
      })
    ).json();
    await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    const url = `${svc.url}/api/posts/${post.id}?view=full`;
    const requirements = decodePaymentRequiredHeader((await fetch(url)).headers.get('payment-required')!).accepts[0]!;
    const buyer = await newBuyer(chain());
    const signed = await signAuthorization(buyer.account, chain(), { to: requirements.payTo as Address, value: PRICE });
    return { seller, post, url, requirements, buyer, signed };
  }

  /** A purchase payment for a post as the paywall claims it before verifying (`pending`). */
  async function claimedPurchase(db: Db, payTo: string, postId: string) {
    const c = await claimPayment(db, {
      purpose: 'purchase',
      protocolVersion: 2,
      network: `eip155:${chain().chainId}`,
      asset: chain().usdc.address,
      payer: privateKeyToAccount(generatePrivateKey()).address,
      payTo,
      amountAtomic: PRICE,
      nonce: `0x${randomBytes(32).toString('hex')}`,
      validAfter: new Date(Date.now() - 60_000),
      validBefore: new Date(Date.now() + 600_000),
      resource: `${svc.url}/api/posts/${postId}`,
      postId,
      payload: {},
      requirements: {},
    });
    if (!c.claimed) throw new Error('not claimed');
    return c.payment;
  }

  /** The service facilitator's transactions sent and not mined yet. */
  const pendingOf = async () => {
    const address = privateKeyToAccount(chain().facilitatorPrivateKey!).address;
    return (
      (await chain().publicClient.getTransactionCount({ address, blockTag: 'pending' })) -
      (await chain().publicClient.getTransactionCount({ address, blockTag: 'latest' }))
    );
  };

  it('a purchase whose batch is replaced on chain: the buyer gets 402 settlement_pending, the retry job settles the payment once, and the purchase is recorded once', async () => {
    const { url, requirements, buyer, signed } = await skillOnSale('batch-seller', 'batched-skill');
    const anvil = testClient(chain());
    const facilitator = privateKeyToAccount(chain().facilitatorPrivateKey!);

    await anvil.setAutomine(false);
    try {
      const answer = fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header({ ...requirements }, signed) } });
      await eventually(async () => (await pendingOf()) === 1, 10_000, 10);
      const nonce = await chain().publicClient.getTransactionCount({
        address: facilitator.address,
        blockTag: 'latest',
      });
      // The facilitator's key sends something else at the batch's nonce, paying more: the batch is replaced.
      const wallet = createWalletClient({
        account: facilitator,
        chain: localChain(chain().chainId, chain().rpcUrl),
        transport: http(chain().rpcUrl),
      });
      await wallet.sendTransaction({
        to: facilitator.address,
        value: 0n,
        nonce,
        gas: 21_000n,
        maxFeePerGas: parseGwei('100'),
        maxPriorityFeePerGas: parseGwei('60'),
      });
      await anvil.mine({ blocks: 1 });
      await anvil.setAutomine(true);
      const res = await answer;
      expect(res.status).to.equal(402);
      const problem = await res.json();
      expect(problem.code).to.equal('settlement_pending');
      const settled = await settledPayment(svc.url, problem.paymentId);
      expect(settled.txHash).to.match(/^0x[0-9a-f]{64}$/);
    } finally {
      await anvil.setAutomine(true);
    }
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
    const purchases = await svc.service.runtime.database.db
      .selectFrom('purchases')
      .selectAll()
      .where('buyer_address', '=', buyer.address.toLowerCase())
      .execute();
    expect(purchases).to.have.length(1);
    // The same header again: the purchase is known, nothing is charged twice.
    await fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header({ ...requirements }, signed) } });
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
  });

  it('a purchase whose seller publishes a new version while it settles records the version the buyer was served', async () => {
    const { db } = svc.service.runtime.database;
    const { seller, post, url, requirements, buyer, signed } = await skillOnSale('versioned-seller', 'versioned-skill');
    const anvil = testClient(chain());

    await anvil.setAutomine(false);
    let res: Response;
    try {
      const answer = fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header({ ...requirements }, signed) } });
      // The settlement is sent and not mined yet: the seller publishes version 2 now.
      await eventually(async () => (await pendingOf()) === 1, 10_000, 10);
      const v2 = await seller.api(`/api/posts/${post.id}/versions`, {
        method: 'POST',
        json: { body: skillBody('versioned-skill', '# second'), version: '2.0.0' },
      });
      expect(v2.status).to.equal(201);
      await anvil.mine({ blocks: 1 });
      res = await answer;
    } finally {
      await anvil.setAutomine(true);
    }
    expect(res.status).to.equal(200);
    const served = await res.json();
    const purchase = await db
      .selectFrom('purchases')
      .innerJoin('post_versions', (join) =>
        join
          .onRef('post_versions.post_id', '=', 'purchases.post_id')
          .onRef('post_versions.version', '=', 'purchases.post_version'),
      )
      .select(['purchases.post_version', 'purchases.skill_digest', 'post_versions.version_label'])
      .where('purchases.buyer_address', '=', buyer.address.toLowerCase())
      .executeTakeFirstOrThrow();
    expect(purchase.post_version).to.equal(1);
    expect(purchase.version_label).to.equal(served.versionLabel);
    expect(purchase.skill_digest).to.equal(served.integrity.skillDigest);
  });

  it('purchases settled in one turn share a statement, and one that cannot be recorded does not fail the others', async () => {
    const { db } = svc.service.runtime.database;
    const seller = await registerAgent(svc, 'shared-seller');
    const post = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: {
          title: 'Shared skill',
          preview: 'preview',
          body: skillBody('shared-skill', '# shared'),
          priceAtomic: PRICE.toString(),
        },
      })
    ).json();
    await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    const claim = () => claimedPurchase(db, seller.address, post.id);
    const [good, broken, alsoGood] = [await claim(), await claim(), await claim()];
    // A purchase row already recorded for a payment still in flight: its settlement cannot insert another.
    await sql`INSERT INTO purchases (payment_id, post_id, post_version, skill_digest, seller_id, buyer_address, amount_atomic, tx_hash)
              SELECT ${broken.id}::uuid, p.id, p.current_version, v.skill_digest, p.author_id, ${broken.payer}, ${PRICE.toString()}::numeric, ${`0x${'ab'.repeat(32)}`}
              FROM posts p JOIN post_versions v ON v.post_id = p.id AND v.version = p.current_version WHERE p.id = ${post.id}::uuid`.execute(
      db,
    );
    const tx = `0x${'cd'.repeat(32)}`;
    const outcomes = await Promise.allSettled(
      [good, broken, alsoGood].map((p) => finalizeSettlement(db, svc.service.runtime.settlementEffects, p, tx)),
    );
    expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    const rows = await db
      .selectFrom('payments')
      .select(['id', 'status'])
      .where('id', 'in', [good.id, broken.id, alsoGood.id])
      .execute();
    const status = Object.fromEntries(rows.map((r) => [r.id, r.status]));
    expect([status[good.id], status[broken.id], status[alsoGood.id]]).to.deep.equal(['settled', 'pending', 'settled']);
    const purchases = await db.selectFrom('purchases').select('payment_id').where('post_id', '=', post.id).execute();
    expect(purchases.map((p) => p.payment_id).sort()).to.deep.equal([good.id, broken.id, alsoGood.id].sort());
  });
  it('twenty requests with one purchase header at once are charged once, and each is answered with the one payment or told it is used', async () => {
    const { db } = svc.service.runtime.database;
    const { url, requirements, buyer, signed } = await skillOnSale('twenty-seller', 'twenty-skill');
    const header = v2Header({ ...requirements }, signed);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } })),
    );
    // Only the request whose claim won is answered with the skill. Copies answered while it is in
    // flight are told so (409, no payment named); those answered once it settled are told the
    // payment is used (its authorization is public on chain by then).
    const codes = await Promise.all(answers.map(async (r) => (r.status === 200 ? 200 : (await r.json()).code)));
    expect(codes.filter((c) => c === 200)).to.have.length(1);
    expect(new Set(codes)).to.satisfy((set: Set<unknown>) =>
      [...set].every((c) => c === 200 || c === 'payment_already_used' || c === 'payment_in_progress'),
    );
    const paymentIds = new Set(answers.map((r) => r.headers.get('x-payment-id')).filter((id) => id !== null));
    expect(paymentIds.size).to.equal(1);
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
    const purchases = await db
      .selectFrom('purchases')
      .select('payment_id')
      .where('buyer_address', '=', buyer.address.toLowerCase())
      .execute();
    expect(purchases.map((p) => p.payment_id)).to.deep.equal([...paymentIds]);
  });

  it('a header forged over a purchase being settled (same payer and nonce, another signature) is refused, and the real one is paid once', async () => {
    const { url, requirements, buyer, signed, seller } = await skillOnSale('forged-seller', 'forged-skill');
    const anvil = testClient(chain());
    const sellerBefore = await balanceOf(chain(), seller.address);
    const flipped = (Number.parseInt(signed.signature.slice(10, 12), 16) ^ 0xff).toString(16).padStart(2, '0');
    const forged = {
      ...signed,
      signature: `${signed.signature.slice(0, 10)}${flipped}${signed.signature.slice(12)}` as Hex,
    };
    await anvil.setAutomine(false);
    let real: Response;
    let copy: Response;
    try {
      const answer = fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header({ ...requirements }, signed) } });
      await eventually(async () => (await pendingOf()) === 1, 10_000, 10);
      copy = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header({ ...requirements }, forged) } });
      await anvil.mine({ blocks: 1 });
      real = await answer;
    } finally {
      await anvil.setAutomine(true);
    }
    expect(real.status).to.equal(200);
    expect(copy.status).to.equal(402);
    expect((await copy.json()).code).to.equal('invalid_exact_evm_nonce_already_used');
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
    expect(await balanceOf(chain(), seller.address)).to.equal(sellerBefore + PRICE);
  });

  it('a purchase whose claim the database refuses is answered 503 and not sent; the same header later is paid once', async () => {
    const { db } = svc.service.runtime.database;
    const { url, requirements, buyer, signed } = await skillOnSale('refused-claim-seller', 'refused-claim-skill');
    const header = v2Header({ ...requirements }, signed);
    // The database ends the session at this buyer's claim, as a failover would.
    await sql`CREATE FUNCTION refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$
              BEGIN RAISE EXCEPTION 'terminating connection' USING ERRCODE = 'admin_shutdown'; END $$`.execute(db);
    await sql`CREATE TRIGGER refuse_claim BEFORE INSERT ON payments FOR EACH ROW
              WHEN (NEW.payer = ${sql.lit(buyer.address.toLowerCase())}) EXECUTE FUNCTION refuse_claim()`.execute(db);
    let refused: Response;
    try {
      refused = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
    } finally {
      await sql`DROP TRIGGER refuse_claim ON payments`.execute(db);
      await sql`DROP FUNCTION refuse_claim()`.execute(db);
    }
    expect(refused.status).to.equal(503);
    expect(await pendingOf()).to.equal(0);
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n);
    const paid = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(paid.status).to.equal(200);
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
  });
});
