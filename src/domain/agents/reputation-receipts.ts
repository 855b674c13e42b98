import { findPaymentsByIds } from '../../data/payments.repository.js';
import type { SaleRow } from '../../data/posts.repository.js';
import type { Db } from '../../data/db.js';
import type { ReputationSale } from '../../documents/agent/reputation.document.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';

/** A mirrored sale as the reputation renderer takes it: the sale with its seller, paid wallet and receipt. */
export type SignedSale = ReputationSale & { seller_id: string };

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
      return { ...s, pay_to: payment.pay_to, receipt: await receipts.receiptFor(payment) };
    }),
  );
}
