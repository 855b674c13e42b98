import { sortedByKey } from '../platform/text.js';
import type { Executor } from './db.js';

/** A receipt signature as kept: whose key signed it, for which transaction and settlement time. */
export interface StoredReceiptSignature {
  payment_id: string;
  signer: string;
  tx_hash: string;
  issued_at: number;
  signature: string;
}

/** The kept receipt signatures of these payments, by payment id. */
export async function findReceiptSignatures(
  db: Executor,
  paymentIds: readonly string[],
): Promise<Map<string, StoredReceiptSignature>> {
  if (!paymentIds.length) return new Map();
  const rows = await db
    .selectFrom('payment_receipts')
    .select(['payment_id', 'signer', 'tx_hash', 'issued_at', 'signature'])
    .where('payment_id', 'in', paymentIds)
    .execute();
  return new Map(rows.map((r) => [r.payment_id, { ...r, issued_at: Number(r.issued_at) }]));
}

/**
 * Keeps receipt signatures, replacing one made for another key, transaction or time. In payment id
 * order: renders of one seller running at once keep the same receipts, and rows locked in
 * different orders by two statements deadlock.
 */
export async function saveReceiptSignatures(db: Executor, rows: readonly StoredReceiptSignature[]): Promise<void> {
  if (!rows.length) return;
  const ordered = sortedByKey(rows, (r) => r.payment_id);
  await db
    .insertInto('payment_receipts')
    .values(ordered.map((r) => ({ ...r, issued_at: String(r.issued_at) })))
    .onConflict((oc) =>
      oc.column('payment_id').doUpdateSet((eb) => ({
        signer: eb.ref('excluded.signer'),
        tx_hash: eb.ref('excluded.tx_hash'),
        issued_at: eb.ref('excluded.issued_at'),
        signature: eb.ref('excluded.signature'),
      })),
    )
    .execute();
}
