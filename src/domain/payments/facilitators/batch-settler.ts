import type { SettleResponse } from '@x402/core/types';
import {
  decodeFunctionResult,
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
import {
  aggregate3Of,
  checkTransfer,
  EIP3009_TOKEN_ABI,
  hasValidSignature,
  authorizationKey,
  authorizationsPaid,
  REASONS,
  type Eip3009Transfer,
} from '../protocol/eip3009.js';
import { BatchQueue, type QueuedTransfer } from './batch-queue.js';
import { NonceSender } from './nonce-sender.js';
import { ReceiptWatcher } from './receipt-watcher.js';

/**
 * Settles EIP-3009 authorizations many to a transaction: each batch is one Multicall3 `aggregate3`
 * call with `allowFailure` set for every transfer, so one authorization that fails cannot fail
 * or charge the others. The batches are pipelined: the next one is sent while earlier ones wait
 * for their receipts, with the account's nonces counted here, in one place. While a batch is
 * being simulated and sent, new authorizations gather for the next one (group commit): a single
 * buyer waits for one transaction, many buyers share them.
 *
 * Its parts, each with one job: the queue (`BatchQueue`: batching, copies of one authorization,
 * waiting for payments to be recorded), the nonce owner (`NonceSender`) and the receipt wait
 * (`ReceiptWatcher`). This class simulates, sends and answers.
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
   * never sends later than the reconciler's stuck threshold assumes (BATCH_MAX_QUEUE_WAIT_MS).
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

/** The longest an authorization waits for its batch to be prepared, by default. */
export const BATCH_MAX_QUEUE_WAIT_MS = 10_000;
/** The longest a sent batch may stay unmined before its payments are left to the chain's verdict, by default. */
export const BATCH_CONFIRMATION_TIMEOUT_MS = 30_000;
/** The longest a simulated batch waits for its payments to be recorded as being settled, by default. */
export const BATCH_RECORD_WAIT_MS = 2_000;

export class BatchSettler {
  private readonly queue: BatchQueue;
  private readonly nonces: NonceSender;
  private readonly receipts: ReceiptWatcher;
  private pumping = false;

  constructor(private readonly opts: BatchSettlerOptions) {
    const { account, client } = opts;
    this.queue = new BatchQueue({ maxBatch: opts.maxBatch, recordWaitMs: opts.recordWaitMs ?? BATCH_RECORD_WAIT_MS });
    this.nonces = new NonceSender({
      address: account.address,
      client,
      sendRawTransaction: opts.sendRawTransaction,
    });
    this.receipts = new ReceiptWatcher({
      address: account.address,
      client,
      pollingIntervalMs: opts.pollingIntervalMs,
      confirmationTimeoutMs: opts.confirmationTimeoutMs ?? BATCH_CONFIRMATION_TIMEOUT_MS,
    });
  }

  /**
   * Settles one transfer in the next batch; resolves with its own settlement answer. Its checks
   * and the batch's simulation run while `ready` is pending; it is sent only once `ready` (or a
   * copy's) resolves, and fails with NotSentError, unsent, if it and every copy's reject.
   */
  settle(transfer: Eip3009Transfer, ready?: Promise<void>): Promise<SettleResponse> {
    const refusal = checkTransfer(transfer, this.opts.chain.id);
    if (refusal) return Promise.resolve(refused(transfer, refusal));
    const answer = this.queue.add(transfer, ready);
    void this.pump();
    return answer;
  }

  /** Sends batches while authorizations wait; one batch is prepared at a time, many may be in flight. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let batch = this.queue.take(); batch; batch = this.queue.take()) {
        const late = Date.now() - (this.opts.maxQueueWaitMs ?? BATCH_MAX_QUEUE_WAIT_MS);
        for (const e of batch) if (e.queuedAt < late) e.done(refused(e.transfer, REASONS.pending));
        const due = batch.filter((e) => e.queuedAt >= late);
        if (!due.length) continue;
        try {
          await this.send(due[0]?.transfer.token as Address, due);
        } catch (err) {
          // Not those sent back to the queue to wait for their record: they go in the next batch.
          for (const e of due) if (!this.queue.holds(e)) e.fail(err);
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Simulates the batch, refuses what would fail, sends the rest as one transaction, and tracks it. */
  private async send(token: Address, batch: QueuedTransfer[]): Promise<void> {
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
        for (const e of failed) e.done(refused(e.transfer, REASONS.simulation));
      });
    const ok = await this.queue.recorded(batch.filter((_, i) => simulated[i]));
    if (!ok.length) return;
    const data =
      ok.length < batch.length
        ? aggregate3Of(
            token,
            ok.map((e) => e.transfer),
          )
        : all;
    const gas = gasOfAll ?? (await estimate(data));
    const sent = await this.nonces.send(async (nonce) =>
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
      for (const e of ok) e.done(refused(e.transfer, REASONS.pending, sent.hash));
      this.opts.log?.warn({ err: sent.lost, hash: sent.hash }, 'settlement batch sent without an answer');
      return;
    }
    void this.track(token, sent.hash, sent.nonce, ok);
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
  private async refuseFailed(token: Address, failed: QueuedTransfer[]): Promise<void> {
    const reasons = await whyTransfersFail(
      this.opts.client,
      token,
      this.opts.chain.id,
      failed.map((e) => e.transfer),
    );
    for (const [i, e] of failed.entries()) e.done(refused(e.transfer, reasons[i] ?? REASONS.simulation));
  }

  /** Waits for a sent batch's receipt and answers each of its payments from it. */
  private async track(token: Address, hash: Hex, nonce: number, entries: QueuedTransfer[]): Promise<void> {
    let receipt: TransactionReceipt | undefined;
    try {
      receipt = await this.receipts.receiptOf(hash, nonce);
    } catch (err) {
      this.opts.log?.warn({ err, hash }, 'settlement batch receipt could not be read');
    }
    if (!receipt) {
      // Dropped, replaced or slow: the next batch counts from the node's pending nonce again.
      this.nonces.forget();
      for (const e of entries) e.done(refused(e.transfer, REASONS.pending, hash));
      return;
    }
    const paidHere = authorizationsPaid(receipt.status === 'success' ? receipt.logs : [], token);
    for (const e of entries) {
      const t = e.transfer;
      const paid = paidHere.has(authorizationKey(t));
      // Not in this receipt: failed inside the batch (another transaction used it first, a balance
      // spent meanwhile). The chain knows whether it was used elsewhere; the retry job asks it.
      e.done(
        paid
          ? { success: true, transaction: hash, network: t.network as SettleResponse['network'], payer: t.from }
          : refused(t, REASONS.pending, hash),
      );
    }
  }
}

/** A settle answer that refuses the transfer with the exact scheme's reason (and the transaction, once sent). */
function refused(t: Eip3009Transfer, reason: string, transaction = ''): SettleResponse {
  return {
    success: false,
    errorReason: reason,
    transaction,
    network: t.network as SettleResponse['network'],
    payer: t.from,
  };
}

/**
 * Why each transfer would fail: a signature not its payer's (checked here), else read from the
 * token's state in one multicall: its authorization used already, or its payer's balance short of
 * it; otherwise the simulation's own failure. The chain's part is a courtesy: without it (the call
 * failed) each refusal names the simulation.
 */
export async function whyTransfersFail(
  client: Pick<PublicClient, 'multicall'>,
  token: Address,
  chainId: number,
  transfers: Eip3009Transfer[],
): Promise<string[]> {
  let states: Array<{ status: string; result?: unknown }> = [];
  try {
    states = await client.multicall({
      contracts: transfers.flatMap((t) => [
        { address: token, abi: EIP3009_TOKEN_ABI, functionName: 'authorizationState', args: [t.from, t.nonce] },
        { address: token, abi: EIP3009_TOKEN_ABI, functionName: 'balanceOf', args: [t.from] },
      ]),
    });
  } catch {
    states = [];
  }
  return transfers.map((t, i) => {
    if (!hasValidSignature(t, chainId)) return REASONS.signature;
    const used = states[2 * i];
    const balance = states[2 * i + 1];
    if (used?.status === 'success' && used.result === true) return REASONS.nonceUsed;
    if (balance?.status === 'success' && typeof balance.result === 'bigint' && balance.result < t.value)
      return REASONS.balance;
    return REASONS.simulation;
  });
}
