import type { SettleResponse } from '@x402/core/types';
import {
  decodeFunctionResult,
  isAddressEqual,
  keccak256,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { MULTICALL3_ADDRESS } from '../../../platform/chain/clients.js';
import { multicall3Abi } from '../../../platform/chain/multicall3.js';
import type { Logger } from '../../../platform/logger.js';
import { RecordState } from './record-state.js';
import { NotSentError } from './facilitator.js';
import {
  aggregate3Of,
  checkTransfer,
  paidBy,
  REASONS,
  whyTransfersFail,
  withFreshNonceOnConflict,
  type Eip3009Transfer,
} from '../protocol/eip3009.js';

/**
 * Settles EIP-3009 authorizations many to a transaction: each batch is one Multicall3 `aggregate3`
 * call with `allowFailure` set for every transfer, so one authorization that fails cannot fail
 * or charge the others. The batches are pipelined: the next one is sent while earlier ones wait
 * for their receipts, with the account's nonces counted here, in one place. While a batch is
 * being simulated and sent, new authorizations gather for the next one (group commit): a single
 * buyer waits for one transaction, many buyers share them.
 *
 * Guarantees:
 * - nothing is sent for an authorization that fails its own checks (recipient, amount, validity
 *   window) or the batch's simulation, where the token checks its signature (a signature not the
 *   payer's, authorization used, balance short): it is refused with the exact scheme's reason, and
 *   the others go on;
 * - a payment is answered settled only when its transaction's receipt holds the token's
 *   `AuthorizationUsed` log for its authorization and its `Transfer` to the payee;
 * - anything else once sent (no receipt in time, the transaction dropped or replaced, a transfer
 *   that failed inside a mined batch) is answered `settlement_pending` with the transaction: the
 *   chain decides, through the retry job (ledger/resolve-payment.ts), as for any unanswered settlement.
 *   The authorization's own nonce is single-use on chain, so no path can charge twice.
 */
export interface BatchSettlerOptions {
  chain: Chain;
  account: PrivateKeyAccount;
  /** Reads: simulation, gas, receipts, the account's nonce. */
  client: PublicClient;
  /** Sends the signed transaction once, never retried by the transport (see withFreshNonceOnConflict). */
  sendRawTransaction(serialized: Hex): Promise<Hex>;
  fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }>;
  /** The most authorizations in one transaction. */
  maxBatch: number;
  /** How often a sent batch's receipt is asked for. */
  pollingIntervalMs: number;
  /** How long a sent batch may stay unmined before its payments are handed to the chain's verdict. */
  confirmationTimeoutMs?: number;
  /**
   * The longest an authorization waits for its batch to be prepared (default 10 s). Past it, it is
   * answered `settlement_pending` without being sent, and the retry job settles it: a live request
   * never sends later than the reconciler's stuck threshold assumes (config.ts).
   */
  maxQueueWaitMs?: number;
  /**
   * The longest a simulated batch waits for its payments to be recorded as being settled (default
   * 2 s). One not recorded by then goes to the next batches (within `maxQueueWaitMs`), which do
   * not wait for it: a slow write holds back one batch once, then only its own payment.
   */
  recordWaitMs?: number;
  log?: Pick<Logger, 'warn'>;
}

/** How many receipt polls pass between looks at whether the batch's nonce was taken by another transaction. */
const NONCE_CHECK_EVERY = 8;

interface Entry {
  transfer: Eip3009Transfer;
  /** Whether the payment is recorded as being settled yet; nothing is sent for it before. */
  record: RecordState;
  /** A batch waited for its record already: later batches go without it until it is done. */
  waited: boolean;
  done(result: SettleResponse): void;
  fail(err: unknown): void;
  queuedAt: number;
}

export class BatchSettler {
  private readonly queue: Entry[] = [];
  private pumping = false;
  /** The next nonce to send with; undefined means "ask the node for its pending count". */
  private nonce: number | undefined;
  private readonly confirmationTimeoutMs: number;
  /**
   * The answer of each authorization queued or in flight, by payer, nonce and signature: a
   * second request for the same one (a retry overlapping the live request, copies of one request)
   * shares the first one's answer instead of failing the simulation against it.
   */
  private readonly inFlight = new Map<string, { entry: Entry; answer: Promise<SettleResponse> }>();

  constructor(private readonly opts: BatchSettlerOptions) {
    this.confirmationTimeoutMs = opts.confirmationTimeoutMs ?? 30_000;
  }

  /**
   * Settles one transfer in the next batch; resolves with its own settlement answer. Its checks
   * and the batch's simulation run while `ready` is pending; it is sent only once `ready` (or a
   * copy's) resolves, and fails with NotSentError, unsent, if it and every copy's reject.
   */
  settle(transfer: Eip3009Transfer, ready?: Promise<void>): Promise<SettleResponse> {
    const refusal = checkTransfer(transfer, this.opts.chain.id);
    if (refusal) return Promise.resolve(this.refused(transfer, refusal));
    // Every signed field and the signature: a copy altered anywhere (a forged signature over someone's
    // payer and nonce, another validity window under theirs) shares nothing with the real one.
    const key = [
      transfer.token,
      transfer.from,
      transfer.to,
      transfer.value,
      transfer.validAfter,
      transfer.validBefore,
      transfer.nonce,
      transfer.signature,
    ]
      .map((field) => String(field).toLowerCase())
      .join(':');
    const known = this.inFlight.get(key);
    if (known) {
      // A copy of the request: whichever of their claims wins, the payment is recorded.
      if (ready) known.entry.record.add(ready);
      return known.answer;
    }
    let entry!: Entry;
    const answer = new Promise<SettleResponse>((done, fail) => {
      // Forgotten the moment it is answered: a copy arriving after that is a payment of its own.
      const forget = () => this.inFlight.delete(key);
      entry = {
        transfer,
        record: new RecordState(ready),
        waited: false,
        done: (result) => {
          forget();
          done(result);
        },
        fail: (err) => {
          forget();
          fail(err);
        },
        queuedAt: Date.now(),
      };
    });
    this.inFlight.set(key, { entry, answer });
    this.queue.push(entry);
    void this.pump();
    return answer;
  }

  private refused(t: Eip3009Transfer, reason: string, transaction = ''): SettleResponse {
    return {
      success: false,
      errorReason: reason,
      transaction,
      network: t.network as SettleResponse['network'],
      payer: t.from,
    };
  }

  /** Sends batches while authorizations wait; one batch is prepared at a time, many may be in flight. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let first = this.queue[0]; first; first = this.queue[0]) {
        const token = first.transfer.token;
        const batch = this.queue.filter((e) => isAddressEqual(e.transfer.token, token)).slice(0, this.opts.maxBatch);
        const taken = new Set(batch);
        this.queue.splice(0, this.queue.length, ...this.queue.filter((e) => !taken.has(e)));
        const late = Date.now() - (this.opts.maxQueueWaitMs ?? 10_000);
        for (const e of batch) if (e.queuedAt < late) e.done(this.refused(e.transfer, REASONS.pending));
        const due = batch.filter((e) => e.queuedAt >= late);
        if (!due.length) continue;
        try {
          await this.send(token, due);
        } catch (err) {
          // Not those sent back to the queue to wait for their record: they go in the next batch.
          for (const e of due) if (!this.queue.includes(e)) e.fail(err);
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Simulates the batch, refuses what would fail, sends the rest as one transaction, and tracks it. */
  private async send(token: Address, batch: Entry[]): Promise<void> {
    const { account, client } = this.opts;
    const all = aggregate3Of(
      token,
      batch.map((e) => e.transfer),
    );
    const estimate = (data: Hex) => client.estimateGas({ account: account.address, to: MULTICALL3_ADDRESS, data });
    // The whole batch's gas is asked for beside its simulation (one round trip less before
    // sending): the transfers sent are those of it that succeed, which need no more than it (a
    // call that fails and reverts leaves no warmed storage behind, EIP-2929).
    const [simulated, gasOfAll, fees] = await Promise.all([
      this.simulate(all),
      estimate(all).catch(() => undefined),
      this.opts.fees(),
    ]);
    const failed = batch.filter((_, i) => !simulated[i]);
    // Refused on their own time: the diagnosis (one multicall) does not hold the others back.
    if (failed.length)
      this.refuseFailed(token, failed).catch(() => {
        for (const e of failed) e.done(this.refused(e.transfer, REASONS.simulation));
      });
    const ok = await this.recorded(batch.filter((_, i) => simulated[i]));
    if (!ok.length) return;
    const data =
      ok.length < batch.length
        ? aggregate3Of(
            token,
            ok.map((e) => e.transfer),
          )
        : all;
    const gas = gasOfAll ?? (await estimate(data));
    const sent = await this.sendWithNonce(async (nonce) =>
      account.signTransaction({
        type: 'eip1559',
        chainId: this.opts.chain.id,
        to: MULTICALL3_ADDRESS,
        data,
        nonce,
        // A margin over the estimate: the batch's transfers write storage that other transactions may warm or cool.
        gas: (gas * 12n) / 10n,
        ...fees,
      }),
    );
    if ('lost' in sent) {
      // The node may or may not have taken it: the chain says, through the retry job.
      for (const e of ok) e.done(this.refused(e.transfer, REASONS.pending, sent.hash));
      this.opts.log?.warn({ err: sent.lost, hash: sent.hash }, 'settlement batch sent without an answer');
      return;
    }
    void this.track(token, sent.hash, sent.nonce, ok);
  }

  /**
   * The entries recorded as being settled, in order, after waiting up to `recordWaitMs` for those
   * no batch waited for yet. One whose record failed is answered with NotSentError; one not
   * recorded yet goes back to the head of the queue, and no later batch waits for it.
   */
  private async recorded(entries: Entry[]): Promise<Entry[]> {
    const awaited = entries.filter((e) => e.record.state === 'pending' && !e.waited);
    if (awaited.length) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(awaited.map((e) => e.record.settled)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, this.opts.recordWaitMs ?? 2_000);
        }),
      ]);
      clearTimeout(timer);
    }
    const go: Entry[] = [];
    const again: Entry[] = [];
    for (const e of entries) {
      const { state } = e.record;
      if (state === 'done') go.push(e);
      else if (state === 'pending') {
        e.waited = true;
        again.push(e);
      } else e.fail(new NotSentError(state.failed));
    }
    this.queue.unshift(...again);
    return go;
  }

  /** Each call's outcome if the batch were mined now (one `eth_call`). */
  private async simulate(data: Hex): Promise<boolean[]> {
    const { data: out } = await this.opts.client.call({
      account: this.opts.account.address,
      to: MULTICALL3_ADDRESS,
      data,
    });
    if (!out) throw new Error('the chain answered the batch simulation with no data');
    const results = decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data: out }) as Array<{
      success: boolean;
    }>;
    return results.map((r) => r.success);
  }

  /** Refuses the transfers the simulation failed, with the reason the chain's state gives (one multicall). */
  private async refuseFailed(token: Address, failed: Entry[]): Promise<void> {
    const reasons = await whyTransfersFail(
      this.opts.client,
      token,
      this.opts.chain.id,
      failed.map((e) => e.transfer),
    );
    for (const [i, e] of failed.entries()) e.done(this.refused(e.transfer, reasons[i] ?? REASONS.simulation));
  }

  /**
   * Signs with the next nonce and sends once. A refusal for a taken nonce (another process with the
   * same key, or a count that drifted) means the node did not take this transaction: read the
   * pending count again and resend. Any other error leaves it unknown whether the node took it.
   */
  private async sendWithNonce(
    sign: (nonce: number) => Promise<Hex>,
  ): Promise<{ hash: Hex; nonce: number } | { hash: Hex; lost: unknown }> {
    let attempt: { hash: Hex; nonce: number } | undefined;
    try {
      return await withFreshNonceOnConflict(
        async () => {
          this.nonce ??= await this.opts.client.getTransactionCount({
            address: this.opts.account.address,
            blockTag: 'pending',
          });
          const nonce = this.nonce;
          const serialized = await sign(nonce);
          attempt = { hash: keccak256(serialized), nonce };
          await this.opts.sendRawTransaction(serialized);
          this.nonce = nonce + 1;
          return attempt;
        },
        () => {
          this.nonce = undefined;
        },
      );
    } catch (err) {
      // Nothing was signed (the nonce could not be read): nothing was sent.
      if (!attempt) throw err;
      this.nonce = undefined;
      return { hash: attempt.hash, lost: err };
    }
  }

  /** Waits for a sent batch's receipt and answers each of its payments from it. */
  private async track(token: Address, hash: Hex, nonce: number, entries: Entry[]): Promise<void> {
    let receipt: TransactionReceipt | undefined;
    try {
      receipt = await this.receiptOf(hash, nonce);
    } catch (err) {
      this.opts.log?.warn({ err, hash }, 'settlement batch receipt could not be read');
    }
    if (!receipt) {
      // Dropped, replaced or slow: the next batch counts from the node's pending nonce again.
      this.nonce = undefined;
      for (const e of entries) e.done(this.refused(e.transfer, REASONS.pending, hash));
      return;
    }
    const logs = receipt.status === 'success' ? receipt.logs : [];
    for (const e of entries) {
      const t = e.transfer;
      const paid = paidBy(logs, { token, from: t.from, nonce: t.nonce, to: t.to, value: t.value });
      // Not in this receipt: failed inside the batch (another transaction used it first, a balance
      // spent meanwhile). The chain knows whether it was used elsewhere; the retry job asks it.
      e.done(
        paid
          ? { success: true, transaction: hash, network: t.network as SettleResponse['network'], payer: t.from }
          : this.refused(t, REASONS.pending, hash),
      );
    }
  }

  /**
   * The receipt of a sent batch, or undefined when it will not come: the account's mined nonce
   * passed this one without it (replaced), or the confirmation timeout passed (dropped or stuck).
   */
  private async receiptOf(hash: Hex, nonce: number): Promise<TransactionReceipt | undefined> {
    const deadline = Date.now() + this.confirmationTimeoutMs;
    for (let poll = 0; ; poll++) {
      const receipt = await this.opts.client.getTransactionReceipt({ hash }).catch(() => undefined);
      if (receipt) return receipt;
      if (Date.now() >= deadline) return undefined;
      if (poll % NONCE_CHECK_EVERY === NONCE_CHECK_EVERY - 1) {
        const mined = await this.opts.client.getTransactionCount({
          address: this.opts.account.address,
          blockTag: 'latest',
        });
        if (mined > nonce) {
          // Mined past this nonce: the receipt may have landed just now; else another transaction took the nonce.
          return this.opts.client.getTransactionReceipt({ hash }).catch(() => undefined);
        }
      }
      await new Promise((r) => setTimeout(r, this.opts.pollingIntervalMs));
    }
  }
}
