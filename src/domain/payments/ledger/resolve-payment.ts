import { getAddress, isHex, type Address, type Hex, type PublicClient } from 'viem';
import type { Db } from '../../../data/db.js';
import {
  findPayment,
  IN_FLIGHT,
  releaseClaim,
  TERMINAL,
  touchPayment,
  failPayment,
  transition,
} from '../../../data/payments.repository.js';
import type { Payment } from '../../../data/schema.js';
import type { Logger } from '../../../platform/logger.js';
import type { FacilitatorPool } from '../facilitators/pool.js';
import { refusalOf } from '../facilitators/facilitator.js';
import { EIP3009_TOKEN_ABI, paidBy } from '../protocol/eip3009.js';
import { storedFacilitatorRequest } from './payment-record.js';
import { finalizeSettlement, type SettlementEffects } from './settlement.js';

export interface ResolveDeps {
  db: Db;
  facilitators: FacilitatorPool;
  /** What each purpose buys, applied when a payment is found settled. */
  settlementEffects: SettlementEffects;
  publicClient: PublicClient;
  log: Logger;
  /** How far back to look for the authorization's use (blocks). */
  lookbackBlocks?: bigint;
}

const EXPIRY_MARGIN_MS = 60_000;
const RELEASE_AFTER_MS = 90_000;
/** How long a used authorization's transfer to us may stay unfound before the payment is failed. */
const USED_ELSEWHERE_AFTER_MS = 10 * 60_000;

/** Thrown when the outcome is still unknown; the job retries with backoff. */
export class StillUnresolvedError extends Error {}

/** The exact scheme's refusal for any error once sending began (@x402/evm's ErrTransactionFailed). */
const TRANSACTION_FAILED = 'invalid_exact_evm_transaction_failed';

export type Resolution = 'settled' | 'failed' | 'expired' | 'released' | 'unchanged';

/**
 * Moves an in-flight payment to a terminal state, asking the chain first: the token's
 * `authorizationState` says whether the authorization was used, and its `AuthorizationUsed` log
 * names the transaction, whose `Transfer` must pay our payee the exact amount.
 * - used, with the right transfer: settled (and its effect applied once);
 * - used otherwise, or cancelled: failed, once no transfer to us has shown for 10 minutes (a
 *   node's logs can lag its state);
 * - unused and past its validity window: expired;
 * - unused, never sent for settlement (the request died before settling): released, so nothing
 *   is charged for a delivery that never happened;
 * - unused, sent for settlement with no answer: settled again through a facilitator. When that
 *   attempt is refused, the chain is asked again before anything is marked failed: the refusal
 *   may be this attempt losing to an earlier one (a request still waiting for its answer), whose
 *   transaction is then the payment's.
 */
export async function resolvePayment(deps: ResolveDeps, paymentId: string): Promise<Resolution> {
  const p = await findPayment(deps.db, paymentId);
  if (!p || TERMINAL.includes(p.status)) return 'unchanged';

  // The head is read before the authorization's state, so "unused" below holds at a block at
  // least this late: unused past its validity window, it can never be used.
  const head = await deps.publicClient.getBlock();
  const before = await useOnChain(deps, p);
  if (before.used) {
    if (before.txHash) return settleFromChain(deps, p, before.txHash);
    return usedWithoutOurTransfer(deps, p);
  }
  // Expiry by the chain's clock, not ours, with a margin for a transaction still being mined.
  if (new Date(p.valid_before).getTime() + EXPIRY_MARGIN_MS <= Number(head.timestamp) * 1000) {
    const expired = await transition(deps.db, p.id, IN_FLIGHT, 'expired', {
      failureReason: 'authorization_expired_unsettled',
    });
    return expired ? 'expired' : 'unchanged';
  }
  if (p.status !== 'settling') {
    // A request verifies and settles within seconds; one this old died before settling.
    if (Date.now() - p.updated_at.getTime() < RELEASE_AFTER_MS) return 'unchanged';
    await releaseClaim(deps.db, p.id);
    return 'released';
  }
  let settled: Awaited<ReturnType<FacilitatorPool['settle']>>;
  try {
    settled = await deps.facilitators.settle(storedFacilitatorRequest(p), p.facilitator ?? undefined);
  } catch (err) {
    await touchPayment(deps.db, p.id);
    const message = err instanceof Error ? err.message : String(err);
    throw new StillUnresolvedError(`settlement retry of ${p.id} did not complete: ${message}`, { cause: err });
  }
  if (settled.result.success) {
    await finalizeSettlement(deps.db, deps.settlementEffects, p, settled.result.transaction, settled.facilitator);
    return 'settled';
  }

  // A refusal does not say whether the authorization is unused: this attempt's transaction may
  // have reverted because an earlier attempt's was mined first. The chain says.
  const after = await useOnChain(deps, p);
  if (after.used) {
    if (after.txHash) return settleFromChain(deps, p, after.txHash);
    return usedWithoutOurTransfer(deps, p);
  }
  const reason = settled.result.errorReason;
  if (reason === 'invalid_exact_evm_nonce_already_used') {
    // Someone (possibly our first attempt) is using it and the chain does not show it yet: the next run reads it.
    await touchPayment(deps.db, p.id);
    throw new StillUnresolvedError(`authorization of ${p.id} is being used; re-checking the chain`);
  }
  if (reason === TRANSACTION_FAILED && !settled.result.transaction) {
    // The scheme says "transaction failed" with no transaction for any error after it began to
    // send: a receipt wait that timed out, a send whose answer was lost. A transaction of this
    // attempt may still be mined after the read above (seen after a crash: the payment was marked
    // failed and its transfer landed later), so the chain decides on the next run; an
    // authorization never used ends `expired` once its validity has passed.
    await touchPayment(deps.db, p.id);
    throw new StillUnresolvedError(`settlement of ${p.id} failed without a transaction; re-checking the chain`);
  }
  const refusal = refusalOf(reason, settled.result.errorMessage, 'settlement_failed');
  if (refusal.raw !== undefined) deps.log.warn({ paymentId: p.id, refusal: refusal.raw }, 'settlement retry refused');
  const failed = await failPayment(deps.db, p.id, ['settling'], { failureReason: refusal.reason });
  return failed ? 'failed' : 'unchanged';
}

/**
 * An authorization the chain says is used, without a transfer to us found for it. Its log may
 * not be readable yet (a node behind the one that answered the state, a block the log query did
 * not reach yet): the next run looks again. Only a payment still unresolved long after it was
 * made is failed: then the authorization was cancelled or spent on another transfer.
 */
async function usedWithoutOurTransfer(deps: ResolveDeps, p: Payment): Promise<Resolution> {
  if (Date.now() - p.created_at.getTime() < USED_ELSEWHERE_AFTER_MS) {
    await touchPayment(deps.db, p.id);
    throw new StillUnresolvedError(`authorization of ${p.id} is used on chain; its transfer is not found yet`);
  }
  const failed = await failPayment(deps.db, p.id, IN_FLIGHT, { failureReason: 'authorization_used_elsewhere' });
  return failed ? 'failed' : 'unchanged';
}

type OnChain = { used: false } | { used: true; txHash: Hex | undefined };

/** Whether the payment's authorization is used on chain and, if so, the transaction that paid us with it. */
async function useOnChain(deps: ResolveDeps, p: Payment): Promise<OnChain> {
  const token = getAddress(p.asset);
  const payer = getAddress(p.payer);
  const nonce = p.nonce;
  if (!isHex(nonce)) throw new Error(`payment ${p.id} has a nonce that is not hex`);
  const used = await deps.publicClient.readContract({
    address: token,
    abi: EIP3009_TOKEN_ABI,
    functionName: 'authorizationState',
    args: [payer, nonce],
  });
  if (!used) return { used: false };
  return {
    used: true,
    txHash: await findUse(deps, token, payer, nonce, getAddress(p.pay_to), BigInt(p.amount_atomic)),
  };
}

async function settleFromChain(deps: ResolveDeps, p: Payment, txHash: Hex): Promise<Resolution> {
  await finalizeSettlement(deps.db, deps.settlementEffects, p, txHash);
  deps.log.info({ paymentId: p.id, txHash }, 'payment reconciled from the chain: settled');
  return 'settled';
}

/**
 * The mined transaction in which this authorization paid `payTo` exactly `amount`. Only the
 * `Transfer` the token emitted for this `AuthorizationUsed` counts: the log right after it, from
 * the same token, with this payer, payee and amount. Any other transfer in the same transaction
 * (another authorization's, a plain transfer) proves nothing about this one: an authorization
 * burnt on a transfer elsewhere, beside a separate payment to the seller, must not settle.
 */
async function findUse(
  deps: ResolveDeps,
  token: Address,
  payer: Address,
  nonce: Hex,
  payTo: Address,
  amount: bigint,
): Promise<Hex | undefined> {
  // Not viem's cached block number (cached for a polling interval): the use may be in a newer block.
  const latest = await deps.publicClient.getBlockNumber({ cacheTime: 0 });
  const lookback = deps.lookbackBlocks ?? 50_000n;
  const logs = await deps.publicClient.getLogs({
    address: token,
    event: EIP3009_TOKEN_ABI[3],
    args: { authorizer: payer, nonce },
    fromBlock: latest > lookback ? latest - lookback : 0n,
    toBlock: latest,
  });
  for (const used of logs) {
    // A log of a pending block has no transaction yet; only mined ones can have paid us.
    if (!used.transactionHash || used.logIndex === null) continue;
    const receipt = await deps.publicClient.getTransactionReceipt({ hash: used.transactionHash });
    if (receipt.status !== 'success') continue;
    if (paidBy(receipt.logs, { token, from: payer, nonce, to: payTo, value: amount })) {
      return used.transactionHash;
    }
  }
  return undefined;
}
