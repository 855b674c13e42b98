import { expect } from 'chai';
import { generatePrivateKey } from 'viem/accounts';
import { findRecentSales, type SaleRow } from '../../src/data/posts.repository.js';
import { SALES_A_STATEMENT, withReceipts } from '../../src/domain/agents/reputation-receipts.js';
import { ReceiptIssuer } from '../../src/domain/payments/protocol/extensions/offer-receipt.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { captureStatements } from '../support/explain.js';

/**
 * A seller's reputation mirror states each sale's signed receipt. A page of a full recompute
 * mirrors up to 10,000 sales at once; these read them a part at a time and keep each part's
 * signatures before reading the next, so a page that fails part-way and is retried does not sign
 * again what it signed.
 */
describe("reputation mirrors' receipts for a page's sales", function () {
  this.timeout(60_000);
  let database: OpenTestDatabase;
  const seller = '00000000-0000-4000-8000-000000000001';
  const SALES = 2 * SALES_A_STATEMENT + 500;

  /** An issuer (of a fresh key unless given one) that counts the receipts it is asked to sign. */
  const countingIssuer = (key = generatePrivateKey()) => {
    const issuer = new ReceiptIssuer(key);
    let signed = 0;
    const receiptFor = issuer.receiptFor.bind(issuer);
    issuer.receiptFor = (payment) => {
      signed += 1;
      return receiptFor(payment);
    };
    return { issuer, signed: () => signed };
  };

  const sales = (): Promise<SaleRow[]> => findRecentSales(database.db, [seller], SALES);

  before(async () => {
    database = await openTestDatabase();
    await database.pool.query(`
      INSERT INTO agents (id, handle, wallet_address) VALUES ('${seller}', 'mirror-seller', '0x${'1'.repeat(40)}');
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name)
      VALUES ('00000000-0000-4000-9000-000000000001', '${seller}', 'published', 'Tables', 'p', 1000000, now(), 'tables');
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
      SELECT id, 1, '1.0.0', '{"files":[]}', 'x', 0, skill_name, skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}') FROM posts;
      WITH k AS (SELECT i, ('00000000-0000-4000-a000-' || lpad(to_hex(i), 12, '0'))::uuid AS pay,
                        '0xb' || lpad(to_hex(i), 39, '0') AS buyer,
                        '0x' || md5('tx' || i) || md5('t' || i) AS tx,
                        now() - interval '3 days' + i * interval '1 second' AS at
                 FROM generate_series(1, ${SALES}) i),
      p AS (INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, settled_at)
            SELECT pay, 'purchase', 'settled', 2, 'eip155:84532', '0x${'0'.repeat(39)}a', buyer, '0x${'1'.repeat(40)}', 1000000,
                   '0x' || md5(pay::text) || md5('n' || pay::text), at - interval '1 minute', at + interval '5 minutes',
                   'https://market.example/api/posts/00000000-0000-4000-9000-000000000001', '00000000-0000-4000-9000-000000000001',
                   tx, '{}', '{}', at
            FROM k RETURNING id)
      INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, amount_atomic, tx_hash, created_at, skill_digest)
      SELECT pay, '00000000-0000-4000-9000-000000000001', 1, '${seller}', buyer, 1000000, tx, at, skill_digest('{"files":[]}')
      FROM k JOIN p ON p.id = k.pay;
      ANALYZE`);
  });
  after(async () => {
    await database?.close();
  });

  it('reads the payments a part at a time, signs each receipt once and keeps it', async () => {
    const page = await sales();
    expect(page).to.have.length(SALES);
    const { issuer, signed } = countingIssuer();
    const { result, statements } = await captureStatements('FROM payments WHERE id = ANY', () =>
      withReceipts(database.db, issuer, page),
    );
    // Every sale, in the order given, with its own payment's receipt.
    expect(result.map((s) => s.id)).to.deep.equal(page.map((s) => s.id));
    for (const s of [result[0]!, result[SALES_A_STATEMENT]!, result.at(-1)!]) {
      expect(s.receipt.payload.transaction).to.equal(s.tx_hash);
      expect(s.pay_to).to.equal(`0x${'1'.repeat(40)}`);
    }
    expect(statements.map((s) => (s.values[0] as string[]).length)).to.deep.equal([
      SALES_A_STATEMENT,
      SALES_A_STATEMENT,
      SALES - 2 * SALES_A_STATEMENT,
    ]);
    expect(signed()).to.equal(SALES);

    // Another key signs its own; rendered again with that key, every receipt is the kept one.
    const key = generatePrivateKey();
    const other = countingIssuer(key);
    const resigned = await withReceipts(database.db, other.issuer, page);
    expect(other.signed(), 'another key signs its own').to.equal(SALES);
    const sameKey = countingIssuer(key);
    const kept = await withReceipts(database.db, sameKey.issuer, page);
    expect(kept.map((s) => s.receipt.signature)).to.deep.equal(resigned.map((s) => s.receipt.signature));
    expect(sameKey.signed(), 'the kept signatures are reused').to.equal(0);
  });

  it('a page that fails part-way keeps the receipts it signed, and its retry signs only the rest', async () => {
    await database.pool.query('DELETE FROM payment_receipts');
    const page = await sales();
    const key = generatePrivateKey();
    const { issuer } = countingIssuer(key);
    // A sale of the second part whose payment cannot be read: the page fails there.
    const broken = page.map((s, i) =>
      i === SALES_A_STATEMENT + 10 ? { ...s, payment_id: '00000000-0000-4000-a000-ffffffffffff' } : s,
    );
    let failure: unknown;
    await withReceipts(database.db, issuer, broken).catch((e) => {
      failure = e;
    });
    expect(String(failure)).to.match(/has no payment/);
    const { rows } = await database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_receipts');
    expect(rows[0]!.n, "the first part's signatures are kept").to.equal(SALES_A_STATEMENT);

    // The retry, as another worker would run it: the same key, nothing signed in its memory.
    const retry = countingIssuer(key);
    const retried = await withReceipts(database.db, retry.issuer, page);
    expect(retried).to.have.length(SALES);
    expect(retry.signed(), 'the retry signs only what the failed attempt had not kept').to.equal(
      SALES - SALES_A_STATEMENT,
    );
  });

  it('renders of one seller signing the same receipts at once, in different orders, keep them all without a deadlock', async () => {
    const page = await sales();
    const orders = [page, [...page].reverse(), [...page.slice(1_200), ...page.slice(0, 1_200)].reverse()];
    for (let round = 0; round < 3; round++) {
      await database.pool.query('DELETE FROM payment_receipts');
      const key = generatePrivateKey();
      // Six renders at once, two in each order, all with the key none of the kept ones was made with.
      const outcomes = await Promise.allSettled(
        [...orders, ...orders].map((order) => withReceipts(database.db, countingIssuer(key).issuer, order)),
      );
      const failed = outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []));
      expect(failed, `round ${round}`).to.deep.equal([]);
      const { rows } = await database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_receipts');
      expect(rows[0]!.n).to.equal(SALES);
    }
  });
});
