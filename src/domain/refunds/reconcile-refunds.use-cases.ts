import { getAddress, isHex, type PublicClient } from 'viem';
import type { Db } from '../../data/db.js';
import {
  failRefund,
  findLiveFailedRefunds,
  findRefundablePurchase,
  findRelayingRefunds,
  type Refund,
} from '../../data/refunds.repository.js';
import type { Logger } from '../../platform/logger.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';
import { findAuthorizationTransfer, isAuthorizationUsed } from './refund-relay.js';
import { recordRefundSettled } from './refunds.use-cases.js';

export interface ReconcileRefundsDeps {
  db: Db;
  publicClient: PublicClient;
  receipts: ReceiptIssuer;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Refunds relaying for less than this are requests in progress, left alone (default 60 s). */
  olderThanMs?: number;
}

/** An authorization unused this long past its validBefore (by the chain's clock) can no longer land. */
const EXPIRY_MARGIN_SECONDS = 60n;

/**
 * Resolves refunds left `relaying` (the process died, or the relay's answer was lost after
 * sending) from the chain, never by sending again: the token's `authorizationState(from, nonce)`
 * says whether the seller's authorization was used.
 * - used: settled with the transaction its `AuthorizationUsed` log names, whose own `Transfer`
 *   paid the buyer the amount (receipt signed, purchase refunded, as a live refund); a log not
 *   found yet is looked for again on the next run;
 * - unused, and its validBefore passed by the chain's clock: `failed`, so the seller may sign a new one;
 * - unused and still valid: left for the next run (a transaction may still land).
 * Idempotent: a refund recorded meanwhile is left as it is.
 */
export async function reconcileRefunds(
  deps: ReconcileRefundsDeps,
): Promise<{ settled: number; failed: number; pending: number }> {
  const stuck = await findRelayingRefunds(deps.db, new Date(Date.now() - (deps.olderThanMs ?? 60_000)));
  // Refused relays whose authorization could still land, and those that expired within the last
  // hour (one last look): a facilitator that answered no may have sent it anyway.
  const refused = await findLiveFailedRefunds(deps.db, {
    nowSeconds: BigInt(Math.floor(Date.now() / 1000)),
    marginSeconds: 3_600n,
  });
  const counts = { settled: 0, failed: 0, pending: 0 };
  if (!stuck.length && !refused.length) return counts;
  // Read before the states below: an authorization unused then was unused at a block this late.
  const head = await deps.publicClient.getBlock();
  for (const refund of [...stuck, ...refused]) {
    try {
      counts[await reconcileRefund(deps, refund, head.timestamp)]++;
    } catch (err) {
      // One refund that cannot be resolved now (an RPC error, a row the ledger refuses) holds up no other.
      deps.log.warn({ err, refundId: refund.id }, 'refund not reconciled: tried again on the next run');
      counts.pending++;
    }
  }
  return counts;
}

async function reconcileRefund(
  deps: ReconcileRefundsDeps,
  refund: Refund,
  headTimestamp: bigint,
): Promise<'settled' | 'failed' | 'pending'> {
  const token = getAddress(refund.asset);
  const from = getAddress(refund.from_address);
  const nonce = refund.nonce;
  if (!isHex(nonce)) throw new Error(`refund ${refund.id} has a nonce that is not hex`);
  if (await isAuthorizationUsed(deps.publicClient, token, from, nonce)) {
    const use = { token, from, nonce, to: getAddress(refund.buyer_address), value: BigInt(refund.amount_atomic) };
    const found = await findAuthorizationTransfer(deps.publicClient, use);
    const purchase = found && (await findRefundablePurchase(deps.db, refund.payment_id));
    if (!found || !purchase) {
      deps.log.warn({ refundId: refund.id }, 'refund authorization used on chain; its transfer is not found yet');
      return 'pending';
    }
    const block = await deps.publicClient.getBlock({ blockNumber: found.blockNumber });
    const settledAt = new Date(Number(block.timestamp) * 1000);
    // Recorded by this run, or by a live request that heard its answer meanwhile: settled either way.
    await recordRefundSettled(deps, refund, purchase.tx_hash, found.txHash, settledAt);
    deps.log.info({ refundId: refund.id, txHash: found.txHash }, 'refund reconciled from the chain: settled');
    return 'settled';
  }
  // A refused refund that did not land stays failed: nothing to record.
  if (refund.status === 'failed') return 'pending';
  const validBefore = validBeforeOf(refund.authorization_payload);
  if (validBefore === undefined || validBefore + EXPIRY_MARGIN_SECONDS > headTimestamp) return 'pending';
  const failed = await failRefund(deps.db, refund.id, 'authorization_expired_unsettled');
  deps.log.info({ refundId: refund.id }, 'refund reconciled from the chain: never settled, failed');
  return failed ? 'failed' : 'pending';
}

/** The validBefore of a stored refund payload (`{authorization, signature}`), in unix seconds. */
function validBeforeOf(payload: unknown): bigint | undefined {
  const value = (payload as { authorization?: { validBefore?: unknown } } | null)?.authorization?.validBefore;
  return typeof value === 'string' && /^\d+$/.test(value) ? BigInt(value) : undefined;
}
