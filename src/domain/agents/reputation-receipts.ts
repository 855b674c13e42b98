import { findPaymentsByIds, type SaleRow } from '../../data/agent-documents.repository.js';
import type { Db } from '../../data/db.js';
import type { ReputationSale } from '../../documents/agent/reputation.document.js';
import type { EIP712SignedReceipt, ReceiptIssuer } from '../payments/receipts.js';

/** A mirrored sale as the reputation renderer takes it: the sale with its seller, paid wallet and receipt. */
export type SignedSale = ReputationSale & { seller_id: string };

/**
 * Receipts signed already, by issuer and payment. A receipt never changes for a given key (it is a
 * function of its settled payment), and signing costs about a millisecond: a recompute that
 * re-renders a busy seller's mirror of 100 sales would otherwise sign the same 100 receipts again.
 */
const signed = new WeakMap<ReceiptIssuer, Map<string, EIP712SignedReceipt>>();
const MEMO_LIMIT = 20_000;

async function receiptOf(receipts: ReceiptIssuer, payment: Parameters<ReceiptIssuer['receiptFor']>[0]) {
  let memo = signed.get(receipts);
  if (!memo) {
    memo = new Map();
    signed.set(receipts, memo);
  }
  const known = memo.get(payment.id);
  if (known) return known;
  const receipt = await receipts.receiptFor(payment);
  // Oldest first out: a Map iterates in insertion order.
  if (memo.size >= MEMO_LIMIT) memo.delete(memo.keys().next().value as string);
  memo.set(payment.id, receipt);
  return receipt;
}

/**
 * The sales with what their ERC-8004 proof of payment states: the wallet paid and the signed
 * receipt of the payment (every sale's payment is settled: a purchase is recorded when it settles).
 */
export async function withReceipts(db: Db, receipts: ReceiptIssuer, sales: SaleRow[]): Promise<SignedSale[]> {
  const payments = new Map(
    (await findPaymentsByIds(db, [...new Set(sales.map((s) => s.payment_id))])).map((p) => [p.id, p]),
  );
  return Promise.all(
    sales.map(async (s) => {
      const payment = payments.get(s.payment_id);
      if (!payment) throw new Error(`sale ${s.id} has no payment ${s.payment_id}`);
      return { ...s, pay_to: payment.pay_to, receipt: await receiptOf(receipts, payment) };
    }),
  );
}
