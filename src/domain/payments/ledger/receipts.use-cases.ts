import { createReceiptDomain, RECEIPT_TYPES } from '@x402/extensions/offer-receipt';
import type { Db } from '../../../data/db.js';
import { findPayment } from '../../../data/payments.repository.js';
import { findPurchaseOfPayment } from '../../../data/posts.repository.js';
import { ConflictError, NotFoundError } from '../../../platform/errors.js';
import type { EIP712SignedReceipt, ReceiptIssuer } from '../protocol/extensions/offer-receipt.js';

/** The key receipts are signed with, as published for verifiers (site AgentCard, /.well-known/x402). */
export const receiptKey = (receipts: ReceiptIssuer) => ({
  address: receipts.address,
  kid: receipts.kid,
  format: 'eip712' as const,
});

/** What a verifier passes to `verifyTypedData` beside the signed payload: the EIP-712 domain and types. */
export const receiptTypedData = () => ({
  domain: createReceiptDomain(),
  types: RECEIPT_TYPES,
  primaryType: 'Receipt' as const,
});

/** A signed receipt with everything needed to verify it without reading the extension's source. */
export type ReceiptDocument = EIP712SignedReceipt & {
  paymentId: string;
  signer: ReturnType<typeof receiptKey>;
  eip712: ReturnType<typeof receiptTypedData>;
  /** For a purchase: the version and skill digest bought, signed by the same key (null for other payments). */
  purchase?: Awaited<ReturnType<ReceiptIssuer['purchaseStatement']>> | null;
};

/**
 * The signed x402 offer-receipt of a payment: 404 `payment_not_found` when there is no such
 * payment, 409 `payment_not_settled` until its transaction is settled (a receipt states a
 * settled transaction, so none exists before).
 */
export async function readReceipt(deps: { db: Db; receipts: ReceiptIssuer }, paymentId: string) {
  const payment = await findPayment(deps.db, paymentId);
  if (!payment) throw new NotFoundError(`Payment ${paymentId}`, 'payment_not_found');
  if (payment.status !== 'settled' || !payment.tx_hash || !payment.settled_at)
    throw new ConflictError(
      `Payment ${paymentId} is ${payment.status}: a receipt is issued once it is settled`,
      'payment_not_settled',
    );
  const document = receiptDocument(deps.receipts, paymentId, await deps.receipts.receiptFor(payment));
  const bought = await findPurchaseOfPayment(deps.db, paymentId);
  const purchase = bought
    ? await deps.receipts.purchaseStatement({
        transaction: payment.tx_hash,
        postId: bought.post_id,
        version: bought.post_version,
        digest: bought.skill_digest,
      })
    : null;
  return { ...document, purchase };
}

/** A signed receipt as served: the receipt, its payment, the signer's key and the typed-data definition. */
export function receiptDocument(
  receipts: ReceiptIssuer,
  paymentId: string,
  receipt: EIP712SignedReceipt,
): ReceiptDocument {
  return { paymentId, ...receipt, signer: receiptKey(receipts), eip712: receiptTypedData() };
}
