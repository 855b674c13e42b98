import { sql, type Selectable } from 'kysely';
import type { Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';
import type { RefundRequests, Refunds } from './schema.js';

/** Why a buyer asks for its money back (the migration's list). */
export const REFUND_REASONS = [
  'not_as_described',
  'does_not_work',
  'security_concern',
  'duplicate_purchase',
  'other',
] as const;
export type RefundReason = (typeof REFUND_REASONS)[number];
/** Why a seller declines a refund request (the migration's list). */
export const DECLINE_REASONS = ['outside_policy', 'works_as_described', 'already_used', 'other'] as const;
export type DeclineReason = (typeof DECLINE_REASONS)[number];

export type RefundRequest = Selectable<RefundRequests>;
export type Refund = Selectable<Refunds>;

/** A settled purchase with what a refund of it needs to know of its payment. */
export interface RefundablePurchase {
  payment_id: string;
  post_id: string;
  seller_id: string;
  buyer_address: string;
  amount_atomic: string;
  /** The purchase's own transaction. */
  tx_hash: string;
  created_at: Date;
  refunded_at: Date | null;
  /** The seller's payout wallet the purchase paid: the wallet a refund comes from. */
  pay_to: string;
  asset: string;
  network: string;
}

/** The purchase paid by `paymentId`, or undefined when that payment bought nothing (or is unknown). */
export function findRefundablePurchase(db: Executor, paymentId: string): Promise<RefundablePurchase | undefined> {
  return db
    .selectFrom('purchases')
    .innerJoin('payments', 'payments.id', 'purchases.payment_id')
    .select([
      'purchases.payment_id',
      'purchases.post_id',
      'purchases.seller_id',
      'purchases.buyer_address',
      'purchases.amount_atomic',
      'purchases.tx_hash',
      'purchases.created_at',
      'purchases.refunded_at',
      'payments.pay_to',
      'payments.asset',
      'payments.network',
    ])
    .where('purchases.payment_id', '=', paymentId)
    .executeTakeFirst();
}

/** Whether the purchase paid by `paymentId` was refunded (no entitlement any more). */
export async function isPurchaseRefunded(db: Executor, paymentId: string): Promise<boolean> {
  const row = await db
    .selectFrom('purchases')
    .select('id')
    .where('payment_id', '=', paymentId)
    .where('refunded_at', 'is not', null)
    .executeTakeFirst();
  return row !== undefined;
}

export function findRefundRequest(db: Executor, paymentId: string): Promise<RefundRequest | undefined> {
  return db.selectFrom('refund_requests').selectAll().where('payment_id', '=', paymentId).executeTakeFirst();
}

/**
 * Records a buyer's refund request and its `refund.requested` event in one statement; undefined
 * when the purchase has a request already (one per purchase).
 */
export async function insertRefundRequest(
  db: Executor,
  r: { purchase: RefundablePurchase; reason: RefundReason; text: string; now: Date },
): Promise<RefundRequest | undefined> {
  const { purchase: p } = r;
  const { rows } = await sql<RefundRequest>`
    WITH request AS (
      INSERT INTO refund_requests (payment_id, post_id, seller_id, buyer_address, reason, text, created_at)
      VALUES (${p.payment_id}, ${p.post_id}, ${p.seller_id}, ${p.buyer_address}, ${r.reason}, ${r.text}, ${r.now})
      ON CONFLICT (payment_id) DO NOTHING
      RETURNING *
    ), event AS (
      INSERT INTO domain_events (type, agent_id, post_id, payload)
      SELECT 'refund.requested', seller_id, post_id,
             jsonb_build_object('paymentId', payment_id::text, 'reason', reason)
      FROM request
    )
    SELECT * FROM request`.execute(db);
  return rows[0];
}

/**
 * Declines an open request and records its `refund.declined` event in one statement; undefined
 * when the request is not open, or a refund of the purchase is being relayed.
 */
export async function declineRefundRequest(
  db: Executor,
  d: { paymentId: string; reason: DeclineReason; text: string; now: Date },
): Promise<RefundRequest | undefined> {
  const { rows } = await sql<RefundRequest>`
    WITH declined AS (
      UPDATE refund_requests
      SET status = 'declined', decline_reason = ${d.reason}, decline_text = ${d.text}, responded_at = ${d.now}
      WHERE payment_id = ${d.paymentId} AND status = 'open'
        AND NOT EXISTS (SELECT 1 FROM refunds WHERE payment_id = ${d.paymentId} AND status = 'relaying')
      RETURNING *
    ), event AS (
      INSERT INTO domain_events (type, agent_id, post_id, payload)
      SELECT 'refund.declined', seller_id, post_id,
             jsonb_build_object('paymentId', payment_id::text, 'reason', decline_reason)
      FROM declined
    )
    SELECT * FROM declined`.execute(db);
  return rows[0];
}

/** The refund of a purchase that is not `failed` (relaying or settled): at most one. */
export function findActiveRefund(db: Executor, paymentId: string): Promise<Refund | undefined> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .where('status', '!=', 'failed')
    .executeTakeFirst();
}

/** Whether a refund was ever tried with this authorization nonce. */
export async function isRefundNonceRecorded(db: Executor, nonce: string): Promise<boolean> {
  const row = await db.selectFrom('refunds').select('id').where('nonce', '=', nonce.toLowerCase()).executeTakeFirst();
  return row !== undefined;
}

/** A refund about to be relayed: the seller's authorization and what it pays. */
export interface RefundClaim {
  purchase: RefundablePurchase;
  from: string;
  nonce: string;
  authorization: Record<string, unknown>;
}

/**
 * Claims the refund of a purchase, `relaying`, linked to the purchase's request if there is one.
 * Undefined when the purchase is refunded already, another refund of it is relaying or settled
 * (the partial unique index stops a second concurrent one), or the nonce was used by a refund.
 */
export async function claimRefund(db: Executor, c: RefundClaim): Promise<Refund | undefined> {
  const p = c.purchase;
  const { rows } = await sql<Refund>`
    INSERT INTO refunds (payment_id, request_id, post_id, seller_id, buyer_address, from_address, amount_atomic,
                         asset, network, nonce, authorization_payload)
    SELECT pu.payment_id, (SELECT q.id FROM refund_requests q WHERE q.payment_id = pu.payment_id),
           pu.post_id, pu.seller_id, pu.buyer_address, ${c.from.toLowerCase()}, pu.amount_atomic,
           ${p.asset}, ${p.network}, ${c.nonce.toLowerCase()}, ${JSON.stringify(c.authorization)}::jsonb
    FROM purchases pu
    WHERE pu.payment_id = ${p.payment_id} AND pu.refunded_at IS NULL
    ON CONFLICT DO NOTHING
    RETURNING *`.execute(db);
  return rows[0];
}

/** A relayed refund that moved nothing: `failed` with the reason, so a new authorization may be tried. */
export async function failRefund(db: Executor, id: string, reason: string): Promise<boolean> {
  const r = await db
    .updateTable('refunds')
    .set({ status: 'failed', failure_reason: reason })
    .where('id', '=', id)
    .where('status', '=', 'relaying')
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/**
 * Records a refund settled, in one statement (one transaction): the refund `settled` with its
 * transaction, time and receipt signature; the purchase refunded (and changed, for the read models
 * that follow change_txid); the open request, if any, `accepted`; and the `purchase.refunded`
 * event. A `failed` refund whose authorization the chain shows used is settled too: the relay's
 * refusal did not keep it from landing. Undefined when it was recorded already.
 */
export async function settleRefund(
  db: Executor,
  s: { refundId: string; txHash: string; settledAt: Date; receiptSignature: string },
): Promise<Refund | undefined> {
  const { rows } = await sql<Refund>`
    WITH refund AS (
      UPDATE refunds
      SET status = 'settled', tx_hash = ${s.txHash.toLowerCase()}, settled_at = ${s.settledAt},
          receipt_signature = ${s.receiptSignature}, failure_reason = NULL
      WHERE id = ${s.refundId} AND status IN ('relaying', 'failed')
      RETURNING *
    ), purchase AS (
      UPDATE purchases pu SET refunded_at = r.settled_at, change_txid = pg_current_xact_id()
      FROM refund r WHERE pu.payment_id = r.payment_id
      RETURNING pu.id
    ), request AS (
      UPDATE refund_requests q SET status = 'accepted', responded_at = r.settled_at
      FROM refund r WHERE q.payment_id = r.payment_id AND q.status = 'open'
      RETURNING q.id
    ), event AS (
      INSERT INTO domain_events (type, agent_id, post_id, payload)
      SELECT 'purchase.refunded', r.seller_id, r.post_id,
             jsonb_build_object('paymentId', r.payment_id::text, 'refundId', r.id::text, 'txHash', r.tx_hash,
                                'amount', r.amount_atomic::text, 'buyer', r.buyer_address)
      FROM refund r
    )
    SELECT * FROM refund`.execute(db);
  return rows[0];
}

/** The refund a purchase's public view shows: the one not failed, else the latest failed attempt. */
export function findShownRefund(db: Executor, paymentId: string): Promise<Refund | undefined> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy(sql`status <> 'failed'`, 'desc')
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The validBefore (unix seconds) of a stored refund authorization, as SQL reads it. */
const VALID_BEFORE = sql<string>`(authorization_payload -> 'authorization' ->> 'validBefore')::numeric`;

/**
 * Failed refunds whose authorization could still land (its validBefore, plus `marginSeconds`, not
 * passed at `nowSeconds`): a facilitator that refused may have sent it anyway, so no other refund
 * of the purchase is claimed until the chain says it did not land.
 */
export function findLiveFailedRefunds(
  db: Executor,
  opts: { nowSeconds: bigint; marginSeconds: bigint; paymentId?: string; limit?: number },
): Promise<Refund[]> {
  let q = db
    .selectFrom('refunds')
    .selectAll()
    .where('status', '=', 'failed')
    .where(
      sql<boolean>`${VALID_BEFORE} + ${opts.marginSeconds.toString()}::numeric > ${opts.nowSeconds.toString()}::numeric`,
    );
  if (opts.paymentId) q = q.where('payment_id', '=', opts.paymentId);
  return q
    .orderBy('created_at')
    .limit(opts.limit ?? 100)
    .execute();
}

/** Refunds still `relaying` since before `before`, oldest first: the reconciler's work. */
export function findRelayingRefunds(db: Executor, before: Date, limit = 100): Promise<Refund[]> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('status', '=', 'relaying')
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** A seller's refund record, as its rating summary states it. */
export interface SellerRefundStats {
  /** Settled purchases of its skills, its own purchases not counted. */
  sales: number;
  /** Those purchases refunded. */
  refunds: number;
  /** refunds / sales, 4 decimals; 0 without sales. */
  refundRate: number;
  /** Refund requests buyers made. */
  requests: number;
  /** Requests the seller declined. */
  declined: number;
  /**
   * Median seconds (whole) from a request to its answer, over answered requests: a decline's
   * time, an accepted request's refund settlement; null when none was answered.
   */
  medianResponseSeconds: number | null;
}

/** A seller's refund record but its sales (which its score facts count). */
export type RefundCounts = Omit<SellerRefundStats, 'sales' | 'refundRate'>;

/**
 * Each seller's refunds (its purchases refunded, its own purchases not counted), refund requests,
 * declines and median response, in one statement for all of them. Read from the refunds and the
 * requests only, so a seller's sales, however many, are not read.
 */
export async function readRefundCounts(db: Executor, sellerIds: string[]): Promise<Map<string, RefundCounts>> {
  if (!sellerIds.length) return new Map();
  const { rows } = await sql<{
    seller_id: string;
    refunds: number;
    requests: number;
    declined: number;
    median: number | null;
  }>`
    SELECT s.id AS seller_id,
      -- A purchase is refunded when its refund settled (settleRefund sets both at once).
      (SELECT count(*)::int FROM refunds r JOIN purchases p ON p.payment_id = r.payment_id
        WHERE r.seller_id = s.id AND r.status = 'settled' AND ${notOwnPurchase('p')}) AS refunds,
      (SELECT count(*)::int FROM refund_requests WHERE seller_id = s.id) AS requests,
      (SELECT count(*)::int FROM refund_requests WHERE seller_id = s.id AND status = 'declined') AS declined,
      (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM
                (CASE WHEN q.status = 'accepted' THEN coalesce(r.settled_at, q.responded_at) ELSE q.responded_at END)
                - q.created_at)::float8)
         FROM refund_requests q
         LEFT JOIN refunds r ON r.request_id = q.id AND r.status = 'settled'
        WHERE q.seller_id = s.id AND q.status <> 'open') AS median
    FROM unnest(${sellerIds}::uuid[]) s(id)`.execute(db);
  return new Map(
    rows.map((r) => [
      r.seller_id,
      {
        refunds: r.refunds,
        requests: r.requests,
        declined: r.declined,
        medianResponseSeconds: r.median === null ? null : Math.round(Number(r.median)),
      },
    ]),
  );
}

/** A seller's refund record from its sales (settled purchases of its skills, not its own) and its refund counts. */
export function refundRecord(sales: number, counts: RefundCounts): SellerRefundStats {
  return {
    sales,
    refunds: counts.refunds,
    refundRate: sales ? Math.round((counts.refunds / sales) * 10_000) / 10_000 : 0,
    requests: counts.requests,
    declined: counts.declined,
    medianResponseSeconds: counts.medianResponseSeconds,
  };
}
