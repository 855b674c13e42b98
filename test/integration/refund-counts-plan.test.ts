import { expect } from 'chai';
import { readRefundCounts } from '../../src/data/refunds.repository.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { captureStatements, tableScans } from '../support/explain.js';

/**
 * A page of sellers' refund record (agent-documents.ts reads it for every page of a full
 * recompute) reads their own refunds and requests, whatever the marketplace's other sellers were
 * refunded: the refunds by seller, and the one settling each answered request by that request.
 */
describe("a page of sellers' refund record", function () {
  this.timeout(60_000);
  let database: OpenTestDatabase;
  const seller = '00000000-0000-4000-8000-000000000001';

  /**
   * `n` settled purchases numbered from `from`, each of the skill of the seller `sellerOf(i)` (SQL
   * over i) by a wallet of its own, with a request the seller accepted and a refund settled i -
   * `from` + 1 seconds after the request.
   */
  const refunded = (sellerOf: string, from: number, n: number) => `
    WITH k AS (SELECT i, ${sellerOf} AS seller, ('00000000-0000-4000-a000-' || lpad(to_hex(i), 12, '0'))::uuid AS pay,
                      ('00000000-0000-4000-b000-' || lpad(to_hex(i), 12, '0'))::uuid AS req,
                      '0xb' || lpad(to_hex(i), 39, '0') AS buyer
               FROM generate_series(${from}, ${from + n - 1}) i),
    j AS (SELECT k.*, posts.id AS post FROM k JOIN posts ON posts.author_id = k.seller),
    p AS (INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, settled_at)
          SELECT pay, 'purchase', 'settled', 2, 'eip155:84532', '0x${'0'.repeat(39)}a', buyer, '0x${'1'.repeat(40)}', 1000000,
                 '0x' || md5(pay::text) || md5('n' || pay::text), now() - interval '1 minute', now() + interval '5 minutes',
                 'https://market.example/api/posts/x', post, '0x' || md5('tx' || pay::text) || md5('t' || pay::text), '{}', '{}', now() - interval '3 days'
          FROM j RETURNING id),
    s AS (INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, amount_atomic, tx_hash, created_at, skill_digest)
          SELECT pay, post, 1, seller, buyer, 1000000, '0x' || md5('tx' || pay::text) || md5('t' || pay::text), now() - interval '3 days',
                 skill_digest('{"files":[]}')
          FROM j JOIN p ON p.id = j.pay RETURNING payment_id),
    q AS (INSERT INTO refund_requests (id, payment_id, post_id, seller_id, buyer_address, reason, text, status, created_at, responded_at)
          SELECT req, pay, post, seller, buyer, 'does_not_work', 'It fails.', 'accepted', now() - interval '2 days', now() - interval '1 day'
          FROM j JOIN s ON s.payment_id = j.pay RETURNING id)
    INSERT INTO refunds (payment_id, request_id, post_id, seller_id, buyer_address, from_address, amount_atomic, asset, network, nonce, authorization_payload, status, tx_hash, settled_at)
    SELECT pay, req, post, seller, buyer, '0x${'1'.repeat(40)}', 1000000, '0x${'0'.repeat(39)}a', 'eip155:84532',
           '0x' || md5('r' || pay::text) || md5('rn' || pay::text), '{}', 'settled', '0x' || md5('rt' || pay::text) || md5('rt2' || pay::text),
           now() - interval '2 days' + (i - ${from} + 1 || ' seconds')::interval
    FROM j JOIN q ON q.id = j.req`;

  /** Agent n's id. */
  const agent = (n: string) => `('00000000-0000-4000-8000-' || lpad(to_hex(${n}), 12, '0'))::uuid`;

  before(async () => {
    database = await openTestDatabase();
    const { pool } = database;
    // The page's seller (agent 1) and 1,000 others, each with a published skill.
    await pool.query(`
      INSERT INTO agents (id, handle, wallet_address)
      SELECT ${agent('n')}, 'refunds-' || n, '0x' || lpad(to_hex(n), 40, '0') FROM generate_series(1, 1001) n;
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name)
      SELECT gen_random_uuid(), id, 'published', 'Tables', 'p', 1000000, now(), 'tables' FROM agents;
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
      SELECT id, 1, '1.0.0', '{"files":[]}', 'x', 0, skill_name, skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}') FROM posts;`);
    // The page's seller: two requests answered by a refund, 1 and 2 s after each was made.
    await pool.query(refunded(agent('1'), 1, 2));
    // The rest of the marketplace: 5,000 refunds, 5 to each of the others.
    await pool.query(refunded(agent('2 + i % 1000'), 100, 5000));
    await pool.query('ANALYZE');
  });
  after(async () => {
    await database?.close();
  });

  it("reads the seller's own refunds through indexes, not every refund of the marketplace", async () => {
    const { result, statements } = await captureStatements('refund_requests', () =>
      readRefundCounts(database.db, [seller]),
    );
    expect(result.get(seller)).to.deep.equal({ refunds: 2, requests: 2, declined: 0, medianResponseSeconds: 2 });
    expect(statements).to.have.length(1);
    const scans = await tableScans(database.pool, statements[0]!, 'refunds');
    expect(scans.map((s) => s.type)).to.not.include('Seq Scan');
    // The seller's two refunds, by seller and by request: nothing of the other seller's 5,000.
    const read = scans.reduce((n, s) => n + s.rows + s.removed, 0);
    expect(read).to.be.at.most(4);
  });
});
