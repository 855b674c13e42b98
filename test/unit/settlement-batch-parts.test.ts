import { expect } from 'chai';
import { encodeAbiParameters, encodeEventTopics, type Hex, type Log, type TransactionReceipt } from 'viem';
import { BatchQueue } from '../../src/domain/payments/facilitators/batch-queue.js';
import { NotSentError } from '../../src/domain/payments/facilitators/facilitator.js';
import { NonceSender } from '../../src/domain/payments/facilitators/nonce-sender.js';
import { ReceiptWatcher } from '../../src/domain/payments/facilitators/receipt-watcher.js';
import {
  authorizationKey,
  authorizationsPaid,
  EIP3009_TOKEN_ABI,
  paidBy,
  type Eip3009Transfer,
} from '../../src/domain/payments/protocol/eip3009.js';

const ACCOUNT = '0x00000000000000000000000000000000000000aa';
const USDC = '0x0000000000000000000000000000000000000001';
const OTHER_TOKEN = '0x0000000000000000000000000000000000000002';

const transfer = (nonce: number, over: Partial<Eip3009Transfer> = {}): Eip3009Transfer => ({
  token: USDC,
  network: 'eip155:31337',
  domain: { name: 'USD Coin', version: '2' },
  amount: 10_000n,
  payTo: '0x00000000000000000000000000000000000000b0',
  from: '0x00000000000000000000000000000000000000c0',
  to: '0x00000000000000000000000000000000000000b0',
  value: 10_000n,
  validAfter: 0n,
  validBefore: 2n ** 40n,
  nonce: `0x${nonce.toString(16).padStart(64, '0')}`,
  signature: `0x${'11'.repeat(65)}`,
  ...over,
});

describe('settlement batches, part by part', () => {
  describe('the nonce owner', () => {
    const signed = (nonce: number) => Promise.resolve(`0x${nonce.toString(16).padStart(4, '0')}` as Hex);

    it('reads the pending count once, then counts locally for pipelined sends', async () => {
      let reads = 0;
      const sentWith: number[] = [];
      const sender = new NonceSender({
        address: ACCOUNT,
        client: {
          getTransactionCount: async () => {
            reads++;
            return 7;
          },
        },
        sendRawTransaction: async (tx) => {
          sentWith.push(Number.parseInt(tx.slice(2), 16));
          return tx;
        },
      });
      const results = [await sender.send(signed), await sender.send(signed), await sender.send(signed)];
      expect(reads).to.equal(1);
      expect(sentWith).to.deep.equal([7, 8, 9]);
      expect(results.map((r) => ('nonce' in r ? r.nonce : -1))).to.deep.equal([7, 8, 9]);
    });

    it('asks the node again and resends when its nonce was taken by another sender', async () => {
      let pending = 3;
      const sentWith: number[] = [];
      const sender = new NonceSender({
        address: ACCOUNT,
        client: { getTransactionCount: async () => pending },
        sendRawTransaction: async (tx) => {
          const nonce = Number.parseInt(tx.slice(2), 16);
          sentWith.push(nonce);
          if (nonce < 5) {
            pending = 5; // another process with the same key sent nonces 3 and 4
            throw new Error('nonce too low');
          }
          return tx;
        },
      });
      const sent = await sender.send(signed);
      expect(sent).to.include({ nonce: 5 });
      expect(sentWith).to.deep.equal([3, 5]);
    });

    it('reports a send without an answer as lost, with its hash, and counts from the node next time', async () => {
      let reads = 0;
      let fail = true;
      const sender = new NonceSender({
        address: ACCOUNT,
        client: {
          getTransactionCount: async () => {
            reads++;
            return 1;
          },
        },
        sendRawTransaction: async (tx) => {
          if (fail) throw new Error('socket hang up');
          return tx;
        },
      });
      const lost = await sender.send(signed);
      expect(lost).to.have.property('lost').that.is.instanceOf(Error);
      expect(lost.hash).to.match(/^0x[0-9a-f]{64}$/);
      fail = false;
      await sender.send(signed);
      expect(reads).to.equal(2);
    });

    it('throws, having sent nothing, when the count cannot be read', async () => {
      let sends = 0;
      const sender = new NonceSender({
        address: ACCOUNT,
        client: {
          getTransactionCount: async () => {
            throw new Error('connection refused');
          },
        },
        sendRawTransaction: async (tx) => {
          sends++;
          return tx;
        },
      });
      const err = await sender.send(signed).catch((e: Error) => e);
      expect(err).to.be.instanceOf(Error).with.property('message', 'connection refused');
      expect(sends).to.equal(0);
    });
  });

  describe('the receipt watcher', () => {
    const hash = `0x${'ab'.repeat(32)}` as Hex;
    const receipt = { status: 'success', transactionHash: hash, logs: [] } as unknown as TransactionReceipt;

    /** A clock that moves only when the watcher waits. */
    function clock() {
      let now = 0;
      return {
        now: () => now,
        wait: async (ms: number) => {
          now += ms;
        },
      };
    }

    it('answers the receipt once the node has it', async () => {
      let polls = 0;
      const watcher = new ReceiptWatcher({
        address: ACCOUNT,
        client: {
          getTransactionReceipt: async () => {
            polls++;
            if (polls < 3) throw new Error('not found');
            return receipt;
          },
          getTransactionCount: async () => 0,
        },
        pollingIntervalMs: 100,
        confirmationTimeoutMs: 10_000,
        ...clock(),
      });
      expect(await watcher.receiptOf(hash, 4)).to.equal(receipt);
      expect(polls).to.equal(3);
    });

    it('gives up once the account mined past the nonce without this transaction (replaced)', async () => {
      let polls = 0;
      const watcher = new ReceiptWatcher({
        address: ACCOUNT,
        client: {
          getTransactionReceipt: async () => {
            polls++;
            throw new Error('not found');
          },
          getTransactionCount: async () => 5,
        },
        pollingIntervalMs: 100,
        confirmationTimeoutMs: 600_000,
        ...clock(),
      });
      expect(await watcher.receiptOf(hash, 4)).to.equal(undefined);
      // Eight polls before the first look at the mined nonce, and one last look after it.
      expect(polls).to.equal(9);
    });

    it('gives up at the confirmation timeout when the transaction stays unmined', async () => {
      const c = clock();
      const watcher = new ReceiptWatcher({
        address: ACCOUNT,
        client: {
          getTransactionReceipt: async () => {
            throw new Error('not found');
          },
          getTransactionCount: async () => 4,
        },
        pollingIntervalMs: 250,
        confirmationTimeoutMs: 30_000,
        ...c,
      });
      expect(await watcher.receiptOf(hash, 4)).to.equal(undefined);
      expect(c.now()).to.equal(30_000);
    });
  });

  describe('the queue', () => {
    it('gives a copy of a queued authorization the same answer, and queues it once', async () => {
      const queue = new BatchQueue({ maxBatch: 10, recordWaitMs: 1_000 });
      const first = queue.add(transfer(1));
      const copy = queue.add(transfer(1));
      const batch = queue.take();
      expect(batch).to.have.length(1);
      batch?.[0]?.done({ success: true, transaction: '0x01', network: 'eip155:31337', payer: ACCOUNT });
      expect(await copy).to.deep.equal(await first);
      expect(queue.take()).to.equal(undefined);
    });

    it('treats a copy under another signature as a payment of its own', () => {
      const queue = new BatchQueue({ maxBatch: 10, recordWaitMs: 1_000 });
      void queue.add(transfer(1));
      void queue.add(transfer(1, { signature: `0x${'22'.repeat(65)}` }));
      expect(queue.take()).to.have.length(2);
    });

    it('hands out batches of one token, at most maxBatch, oldest first', () => {
      const queue = new BatchQueue({ maxBatch: 2, recordWaitMs: 1_000 });
      for (const [n, token] of [
        [1, USDC],
        [2, OTHER_TOKEN],
        [3, USDC],
        [4, USDC],
      ] as const)
        void queue.add(transfer(n, { token }));
      const nonces = (b: ReturnType<BatchQueue['take']>) => b?.map((e) => Number(BigInt(e.transfer.nonce)));
      expect(nonces(queue.take())).to.deep.equal([1, 3]);
      expect(nonces(queue.take())).to.deep.equal([2]);
      expect(nonces(queue.take())).to.deep.equal([4]);
      expect(queue.take()).to.equal(undefined);
    });

    it('sends only recorded payments: a failed record is NotSentError, a slow one goes back to the head', async () => {
      const queue = new BatchQueue({ maxBatch: 10, recordWaitMs: 20 });
      let recordSlow!: () => void;
      const slow = new Promise<void>((resolve) => {
        recordSlow = resolve;
      });
      const failedWrite = Promise.reject(new Error('database unreachable'));
      void queue.add(transfer(1), Promise.resolve());
      const failing = queue.add(transfer(2), failedWrite);
      void queue.add(transfer(3), slow);
      const batch = queue.take() ?? [];
      const go = await queue.recorded(batch);
      expect(go.map((e) => Number(BigInt(e.transfer.nonce)))).to.deep.equal([1]);
      const err = await failing.catch((e: unknown) => e);
      expect(err).to.be.instanceOf(NotSentError);
      const again = queue.take() ?? [];
      expect(again.map((e) => Number(BigInt(e.transfer.nonce)))).to.deep.equal([3]);
      expect(again[0]?.waited).to.equal(true);
      // A batch waited for it once: the next ones do not, they take it when its record is done.
      expect(await queue.recorded(again)).to.deep.equal([]);
      recordSlow();
      await slow;
      const later = queue.take() ?? [];
      expect((await queue.recorded(later)).map((e) => Number(BigInt(e.transfer.nonce)))).to.deep.equal([3]);
    });
  });

  describe("the batch receipt's payments", () => {
    /** A log of the token at this index: an event of EIP3009_TOKEN_ABI. */
    const log = (
      logIndex: number,
      event: 'AuthorizationUsed' | 'Transfer',
      args: Record<string, unknown>,
      address: Hex = USDC,
    ) =>
      ({
        address,
        logIndex,
        topics: encodeEventTopics({ abi: EIP3009_TOKEN_ABI, eventName: event, args } as never),
        data: event === 'Transfer' ? encodeAbiParameters([{ type: 'uint256' }], [args.value as bigint]) : '0x',
      }) as unknown as Log;
    /** The two logs one transferWithAuthorization call leaves, from index i. */
    const settled = (i: number, t: Eip3009Transfer, paid: Partial<{ from: Hex; to: Hex; value: bigint }> = {}) => [
      log(i, 'AuthorizationUsed', { authorizer: t.from, nonce: t.nonce }),
      log(i + 1, 'Transfer', { from: paid.from ?? t.from, to: paid.to ?? t.to, value: paid.value ?? t.value }),
    ];

    it('finds every authorization the receipt paid, each exactly as paidBy decides for one', () => {
      const [a, b, c, d, e, f] = [1, 2, 3, 4, 5, 6].map((n) => transfer(n));
      const logs = [
        ...settled(0, a!),
        ...settled(2, b!, { value: 9_999n }), // not the amount authorized
        ...settled(4, c!, { to: '0x00000000000000000000000000000000000000b1' }), // another payee
        log(6, 'AuthorizationUsed', { authorizer: d!.from, nonce: d!.nonce }), // its transfer is not the next log
        log(7, 'Transfer', { from: ACCOUNT, to: d!.to, value: 1n }),
        log(8, 'Transfer', { from: d!.from, to: d!.to, value: d!.value }),
        ...settled(9, e!).map((l) => ({ ...l, address: OTHER_TOKEN }) as Log), // another token's
        // Two logs at one index (no node writes this): the first decides, and it is not f's.
        log(11, 'AuthorizationUsed', { authorizer: f!.from, nonce: f!.nonce }),
        log(12, 'Transfer', { from: f!.from, to: f!.to, value: 1n }),
        log(12, 'Transfer', { from: f!.from, to: f!.to, value: f!.value }),
      ];
      const paid = authorizationsPaid(logs, USDC);
      // What the receipt shows paid: a's transfer; b's and c's as they went (another amount, another
      // payee), which are not what b and c authorized; nothing of d's or of the other token's.
      expect([...paid]).to.deep.equal([
        authorizationKey(a!),
        authorizationKey({ ...b!, value: 9_999n }),
        authorizationKey({ ...c!, to: '0x00000000000000000000000000000000000000b1' }),
        authorizationKey({ ...f!, value: 1n }),
      ]);
      for (const t of [a, b, c, d, e, f])
        expect(paidBy(logs, { ...t!, token: USDC }), `nonce ${t!.nonce}`).to.equal(paid.has(authorizationKey(t!)));
      expect(paidBy(logs, { ...e!, token: OTHER_TOKEN })).to.equal(true);
      // Addresses and the nonce compare whatever their case.
      expect(
        paidBy(logs, {
          ...a!,
          token: USDC,
          from: a!.from.toUpperCase().replace('0X', '0x') as Hex,
          nonce: a!.nonce.toUpperCase().replace('0X', '0x') as Hex,
        }),
      ).to.equal(true);
    });
  });
});
