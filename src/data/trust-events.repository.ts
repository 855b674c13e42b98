import { sql } from 'kysely';
import type { Executor } from './db.js';

/** What happened to a seller's trust besides its sales: reviews, responses, refunds, on-chain feedback. */
export type TrustEventKind =
  | 'Review'
  | 'ReviewRevoked'
  | 'SellerResponse'
  | 'RefundRequested'
  | 'RefundDeclined'
  | 'Refunded'
  | 'NewFeedback';

export interface TrustEventRow {
  seller_id: string;
  kind: TrustEventKind;
  id: string;
  occurred_at: Date;
  client_address: string;
  post_id: string | null;
  details: Record<string, unknown>;
}

/**
 * The newest trust events of each seller (at most `limit` each), newest first: read from the
 * tables that hold them, so a mirror is always what the ledger and the chain say now (a review
 * revoked, a feedback a reorganisation removed, a refund settled). One statement for any number
 * of sellers, each kind through its seller index.
 */
export async function readTrustEvents(db: Executor, sellerIds: string[], limit: number): Promise<TrustEventRow[]> {
  if (!sellerIds.length) return [];
  const { rows } = await sql<TrustEventRow>`
    SELECT a.id AS seller_id, e.* FROM unnest(${sellerIds}::uuid[]) WITH ORDINALITY a(id, ord)
    CROSS JOIN LATERAL (
      (SELECT 'Review' AS kind, r.id::text AS id, r.created_at AS occurred_at, r.buyer_address AS client_address,
              r.post_id, jsonb_build_object('rating', r.rating, 'revision', r.revision, 'status', r.status,
                'paymentId', r.payment_id, 'feedbackHash', r.feedback_hash) AS details
       FROM reviews r WHERE r.seller_id = a.id ORDER BY r.created_at DESC LIMIT ${limit})
      UNION ALL
      (SELECT 'ReviewRevoked', r.id::text || ':revoked', r.revoked_at, r.buyer_address, r.post_id,
              jsonb_build_object('revision', r.revision, 'paymentId', r.payment_id)
       FROM reviews r WHERE r.seller_id = a.id AND r.revoked_at IS NOT NULL ORDER BY r.revoked_at DESC LIMIT ${limit})
      UNION ALL
      (SELECT 'SellerResponse', x.post_id::text || ':' || x.buyer_address, x.created_at, x.buyer_address, x.post_id,
              '{}'::jsonb
       FROM review_responses x WHERE x.seller_id = a.id ORDER BY x.created_at DESC LIMIT ${limit})
      UNION ALL
      (SELECT 'RefundRequested', q.id::text, q.created_at, q.buyer_address, q.post_id,
              jsonb_build_object('paymentId', q.payment_id, 'reason', q.reason, 'status', q.status)
       FROM refund_requests q WHERE q.seller_id = a.id ORDER BY q.created_at DESC LIMIT ${limit})
      UNION ALL
      (SELECT 'RefundDeclined', q.id::text || ':declined', q.responded_at, q.buyer_address, q.post_id,
              jsonb_build_object('paymentId', q.payment_id, 'reason', q.decline_reason)
       FROM refund_requests q WHERE q.seller_id = a.id AND q.status = 'declined'
       ORDER BY q.responded_at DESC LIMIT ${limit})
      UNION ALL
      (SELECT 'Refunded', f.id::text, f.settled_at, f.buyer_address, f.post_id,
              jsonb_build_object('paymentId', f.payment_id, 'amountAtomic', f.amount_atomic::text, 'txHash', f.tx_hash,
                'requested', f.request_id IS NOT NULL)
       FROM refunds f WHERE f.seller_id = a.id AND f.status = 'settled' ORDER BY f.settled_at DESC LIMIT ${limit})
      UNION ALL
      (SELECT 'NewFeedback', o.chain_id || ':' || o.tx_hash || ':' || o.log_index, o.created_at, o.client_address,
              (SELECT r.post_id FROM reviews r WHERE r.id = o.review_id),
              jsonb_build_object('feedbackIndex', o.feedback_index, 'value', o.value::text,
                'valueDecimals', o.value_decimals, 'tag1', o.tag1, 'tag2', o.tag2, 'endpoint', o.endpoint,
                'feedbackURI', o.feedback_uri, 'feedbackHash', o.feedback_hash, 'txHash', o.tx_hash,
                'blockNumber', o.block_number, 'verification', o.verification, 'reason', o.reason,
                'revoked', o.revoked_block_number IS NOT NULL)
       FROM onchain_feedback o WHERE o.seller_id = a.id ORDER BY o.block_number DESC, o.log_index DESC LIMIT ${limit})
      ORDER BY occurred_at DESC, id LIMIT ${limit}
    ) e
    ORDER BY a.ord, e.occurred_at DESC, e.id`.execute(db);
  return rows;
}

/**
 * A mark per seller that changes whenever one of its trust events is written, changed or removed
 * (a count and the newest time of each kind): part of its reputation mirror's fingerprint.
 */
export async function trustEventMarks(db: Executor, sellerIds: string[]): Promise<Map<string, string>> {
  if (!sellerIds.length) return new Map();
  const { rows } = await sql<{ id: string; mark: string }>`
    SELECT a.id, concat_ws('|',
      (SELECT count(*) || ':' || coalesce(max(created_at)::text, '') || ':' || count(revoked_at)
       FROM reviews WHERE seller_id = a.id),
      (SELECT count(*) FROM review_responses WHERE seller_id = a.id),
      (SELECT count(*) || ':' || coalesce(max(coalesce(responded_at, created_at))::text, '')
       FROM refund_requests WHERE seller_id = a.id),
      (SELECT count(*) FILTER (WHERE status = 'settled') FROM refunds WHERE seller_id = a.id),
      (SELECT count(*) || ':' || coalesce(max(created_at)::text, '') || ':' || count(revoked_block_number) || ':' ||
              coalesce(sum(block_number), 0)
       FROM onchain_feedback WHERE seller_id = a.id)) AS mark
    FROM unnest(${sellerIds}::uuid[]) a(id)`.execute(db);
  return new Map(rows.map((r) => [r.id, r.mark]));
}
