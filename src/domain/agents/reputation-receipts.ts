import type { Hex } from 'viem';
import { findSettlementFacts, type SettlementFacts } from '../../data/payments.repository.js';
import {
  findReceiptSignatures,
  saveReceiptSignatures,
  type StoredReceiptSignature,
} from '../../data/payment-receipts.repository.js';
import type { SaleRow } from '../../data/posts.repository.js';
import type { Db } from '../../data/db.js';
import type { ReputationSale } from '../../documents/agent/reputation.document.js';
import {
  receiptPayloadOf,
  type EIP712SignedReceipt,
  type ReceiptIssuer,
} from '../payments/protocol/extensions/offer-receipt.js';

/** A mirrored sale as the reputation renderer takes it: the sale with its seller, paid wallet and receipt. */
export type SignedSale = ReputationSale & { seller_id: string };

/**
 * Sales handled a statement at a time: a page of a full recompute mirrors up to 10,000 sales
 * (100 agents, 100 each), whose payments and kept signatures are random reads of the largest
 * tables. In parts, no statement grows with the page (one over a cold cache would outlast the
 * statement timeout), and the signatures a part made are kept before the next part is read, so a
 * page retried after a failure signs only what it had not signed yet.
 */
export const SALES_A_STATEMENT = 1_000;

/**
 * The sales with what their ERC-8004 proof of payment states: the wallet paid and the signed
 * receipt of the payment (every sale's payment is settled: a purchase is recorded when it settles).
 * A receipt signed once is kept (payment_receipts) and reused while the key, the transaction and
 * the settlement time are the same: RFC 6979 signatures are deterministic, so it is the same bytes.
 */
export async function withReceipts(db: Db, receipts: ReceiptIssuer, sales: SaleRow[]): Promise<SignedSale[]> {
  const out: SignedSale[] = [];
  for (let i = 0; i < sales.length; i += SALES_A_STATEMENT)
    out.push(...(await withReceiptsOfPart(db, receipts, sales.slice(i, i + SALES_A_STATEMENT))));
  return out;
}

async function withReceiptsOfPart(db: Db, receipts: ReceiptIssuer, sales: SaleRow[]): Promise<SignedSale[]> {
  const ids = [...new Set(sales.map((s) => s.payment_id))];
  const [found, kept] = await Promise.all([findSettlementFacts(db, ids), findReceiptSignatures(db, ids)]);
  const payments = new Map(found.map((p) => [p.id, p]));
  const signer = receipts.address.toLowerCase();
  const signed = new Map<string, StoredReceiptSignature>();
  /** The kept signature when it is this key's for this transaction and time; else signed now, and kept. */
  const receiptOf = async (payment: SettlementFacts): Promise<EIP712SignedReceipt> => {
    const payload = receiptPayloadOf(payment);
    const k = kept.get(payment.id);
    if (k && k.signer === signer && k.tx_hash === payload.transaction && k.issued_at === payload.issuedAt)
      return { format: 'eip712', payload, signature: k.signature as Hex };
    const receipt = await receipts.receiptFor(payment);
    signed.set(payment.id, {
      payment_id: payment.id,
      signer,
      tx_hash: payload.transaction,
      issued_at: payload.issuedAt,
      signature: receipt.signature.toLowerCase(),
    });
    return receipt;
  };
  const out = await Promise.all(
    sales.map(async (s) => {
      const payment = payments.get(s.payment_id);
      if (!payment) throw new Error(`sale ${s.id} has no payment ${s.payment_id}`);
      return { ...s, pay_to: payment.pay_to, receipt: await receiptOf(payment) };
    }),
  );
  await saveReceiptSignatures(db, [...signed.values()]);
  return out;
}
