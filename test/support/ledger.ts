import type pg from 'pg';

/** A settled sale to record: the skill, its seller, the buyer wallet, when and for how much. */
export interface SaleRow {
  postId: string;
  sellerId: string;
  buyer: string;
  at: Date;
  amountAtomic?: number;
}

let recorded = 0;
const nextId = () => `00000000-0000-4000-a000-${(++recorded).toString(16).padStart(12, '0')}`;

/**
 * Writes settled purchase payments and their purchases straight into the ledger, dated as given
 * (a database test's history, without a chain). `failed` writes payments attempted and refused
 * instead, with no purchase.
 */
export async function recordSales(pool: pg.Pool, sales: SaleRow[], status: 'settled' | 'failed' = 'settled') {
  const ids = sales.map(nextId);
  const cols = [
    ids,
    sales.map((s) => s.buyer),
    sales.map((s) => s.at.toISOString()),
    sales.map((s) => s.postId),
    sales.map((s) => s.sellerId),
    sales.map((s) => s.amountAtomic ?? 1_000_000),
  ];
  await pool.query(
    `WITH s AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::uuid[], $5::uuid[], $6::bigint[]) s(id, buyer, at, post_id, seller_id, amount))
     , pay AS (
       INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, created_at, updated_at, settled_at)
       SELECT id, 'purchase', $7, 2, 'eip155:84532', '0x${'0'.repeat(39)}a', buyer, '0x${'0'.repeat(39)}b', amount, '0x' || md5(id::text) || md5('n' || id::text),
              at - interval '1 minute', at + interval '5 minutes', 'https://market.example/api/posts/x', post_id,
              CASE WHEN $7 = 'settled' THEN '0x' || md5('tx' || id::text) || md5('t' || id::text) END, '{}', '{}', at, at,
              CASE WHEN $7 = 'settled' THEN at END
       FROM s RETURNING id)
     INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, amount_atomic, tx_hash, created_at, skill_digest)
     SELECT s.id, s.post_id, 1, s.seller_id, s.buyer, s.amount, '0x' || md5('tx' || s.id::text) || md5('t' || s.id::text), s.at, skill_digest('{"files":[]}')
     FROM s JOIN pay USING (id) WHERE $7 = 'settled'`,
    [...cols, status],
  );
}

/** Agent `n`'s id, wallet, and its one skill's id, as `seedSellers` writes them. */
export const sellerId = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
export const walletOf = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
export const skillOf = (seller: number) => sellerId(0x10000 + seller);

/** Sellers 1..`count` (`seller-n`, wallet n), each with one published paid skill at version 1. */
export async function seedSellers(pool: pg.Pool, count: number) {
  await pool.query(
    `INSERT INTO agents (id, handle, wallet_address)
     SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, 'seller-' || n, '0x' || lpad(to_hex(n), 40, '0')
     FROM generate_series(1, $1::int) n`,
    [count],
  );
  await pool.query(
    `INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name)
     SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(65536 + n), 12, '0'))::uuid, ('00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid,
            'published', 'Skill ' || n, 'p', 1000000, now(), 'skill-' || n
     FROM generate_series(1, $1::int) n`,
    [count],
  );
  await pool.query(
    `INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
     SELECT id, 1, '1.0.0', '{"files":[]}', 'x', 0, skill_name, skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}') FROM posts`,
  );
}
