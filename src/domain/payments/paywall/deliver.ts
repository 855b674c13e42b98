import type { SettleResponse } from '@x402/core/types';
import type { Db } from '../../../data/db.js';
import type { Payment } from '../../../data/schema.js';
import type { Logger } from '../../../platform/logger.js';
import type { PaidResource, PaywallOutcome } from './paid-resource.js';
import { settledHeader } from './repeats.js';
import type { ReceiptIssuer } from '../protocol/extensions/offer-receipt.js';
import { finalizeSettlement, type SettlementEffects } from '../ledger/settlement.js';
import type { DecodedPayment } from '../protocol/x402-codec.js';

export interface DeliveryDeps {
  db: Db;
  settlementEffects: SettlementEffects;
  log: Logger;
  receipts: ReceiptIssuer | undefined;
}

/**
 * Records the settlement with what it bought, then renders the resource with its settlement
 * response and signed receipt. The payment may have been resolved meanwhile by the retry job,
 * from this same use of the authorization: settled already, it is delivered as is; marked failed
 * or expired by a look at the chain before this transaction was mined, it is settled now (see
 * finalizeSettlement).
 */
export async function deliverSettled<P>(
  deps: DeliveryDeps,
  claimed: Payment,
  settled: { result: SettleResponse; facilitator: string },
  decoded: DecodedPayment,
  resource: PaidResource<P>,
  prepared: P,
): Promise<PaywallOutcome> {
  const { db, settlementEffects, log, receipts } = deps;
  const paymentId = claimed.id;
  const { transaction } = settled.result;
  // The receipt is signed while the settlement is being recorded: it states the settlement time
  // chosen here, which the row is written with. Signing is synchronous CPU work, so it starts on
  // the next turn of the event loop, once the transaction's first statement is on its way.
  const settledAt = new Date();
  const recording = finalizeSettlement(db, settlementEffects, claimed, transaction, settled.facilitator, {
    settledAt,
    ...resource.recordAs?.(prepared),
  });
  const anticipated = new Promise<void>((resolve) => setImmediate(resolve))
    .then(() => receipts?.receiptFor({ ...claimed, status: 'settled', tx_hash: transaction, settled_at: settledAt }))
    .catch(() => undefined);
  const final = await recording;
  const signed = await anticipated;
  if (final.tx_hash?.toLowerCase() !== transaction.toLowerCase()) {
    // One authorization is used once on chain, so two transactions for it mean a facilitator
    // reported a settlement the chain does not hold: the ledger keeps the one recorded first.
    log.warn(
      { paymentId, recorded: final.tx_hash, reported: transaction, facilitator: settled.facilitator },
      'settled payment recorded with another transaction than its facilitator reported',
    );
  }
  const body = await resource.render(final, prepared);
  const asAnticipated =
    signed !== undefined &&
    final.tx_hash === transaction &&
    final.settled_at !== null &&
    new Date(final.settled_at).getTime() === settledAt.getTime();
  return {
    kind: 'paid',
    body,
    payment: final,
    header: await settledHeader(receipts, decoded.version, final, asAnticipated ? signed : undefined),
    replay: false,
  };
}
