import { expect } from 'chai';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { recordSales, seedSellers, sellerId, skillOf, walletOf } from '../support/ledger.js';
import { eventually } from '../support/service.js';

const BUYER = walletOf(0xb0b);
const SECOND_BUYER = walletOf(0xca7);

/**
 * A skill's rating is recounted under a lock on the skill's row, while other writes that touch the
 * skill (a seller's response, a refund, a review) first take the foreign-key lock on that row and
 * then update it. The recount must not conflict with the foreign-key lock: if it does, two such
 * writes on one skill wait for each other, and PostgreSQL aborts one as a deadlock.
 */
describe("a skill's rating recount beside other writes to the skill", function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let pool: pg.Pool;
  let reviewId: string;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 3 });
    pool.on('error', () => undefined); // idle clients of a database being dropped
    await seedSellers(pool, 1);
    await recordSales(
      pool,
      [BUYER, SECOND_BUYER].map((buyer) => ({ postId: skillOf(1), sellerId: sellerId(1), buyer, at: new Date() })),
    );
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO reviews (post_id, seller_id, buyer_address, payment_id, post_version, revision, rating, text,
                            issued_at, signature, feedback, feedback_hash)
       SELECT post_id, seller_id, buyer_address, payment_id, 1, 1, 2, 'Slow', now(), '0x01', '{}', '0x' || repeat('a', 64)
       FROM purchases WHERE buyer_address = $1 RETURNING id`,
      [BUYER],
    );
    reviewId = rows[0]!.id;
  });
  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  /** Whether the session `pid` is waiting for a lock now. */
  const waitsForLock = async (pid: number) => {
    const { rows } = await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = $2', [
      pid,
      'Lock',
    ]);
    return rows.length > 0;
  };
  /** Resolves once `query` has finished or its session waits for a lock, whichever comes first. */
  const finishedOrBlocked = async (client: pg.PoolClient, query: Promise<unknown>) => {
    let done = false;
    void query.then(
      () => (done = true),
      () => (done = true),
    );
    const pid = (client as unknown as { processID: number }).processID;
    await eventually(async () => done || (await waitsForLock(pid)) || undefined, 10_000, 20);
  };

  /**
   * A seller's response to `buyer`'s review, whose foreign-key lock on the skill is taken before
   * `other` runs in a second transaction, and whose insert goes on after it: both must commit.
   */
  async function respondBeside(buyer: string, other: (client: pg.PoolClient) => Promise<unknown>) {
    const responder = await pool.connect();
    const writer = await pool.connect();
    try {
      await responder.query('BEGIN');
      // What the response's insert takes first: its foreign-key check's lock on the skill's row.
      await responder.query('SELECT 1 FROM posts WHERE id = $1 FOR KEY SHARE', [skillOf(1)]);
      await writer.query('BEGIN');
      const written = other(writer);
      await finishedOrBlocked(writer, written);
      // The response's insert goes on: its trigger touches the skill's row.
      const responded = responder.query(
        'INSERT INTO review_responses (post_id, buyer_address, seller_id, text) VALUES ($1, $2, $3, $4)',
        [skillOf(1), buyer, sellerId(1), 'We fixed the slow start.'],
      );
      await finishedOrBlocked(responder, responded);
      const outcomes = await Promise.allSettled([
        written.then(() => writer.query('COMMIT')),
        responded.then(() => responder.query('COMMIT')),
      ]);
      expect(outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'committed'))).to.deep.equal([
        'committed',
        'committed',
      ]);
    } finally {
      for (const c of [responder, writer]) {
        await c.query('ROLLBACK').catch(() => undefined);
        c.release();
      }
    }
  }
  const rating = async () =>
    (await pool.query<{ count: number }>('SELECT count FROM skill_ratings WHERE post_id = $1', [skillOf(1)])).rows[0]
      ?.count;

  it("a seller's response and the verification of on-chain feedback on the same skill both commit", async () => {
    // The follower records feedback that names the review: its trigger touches the skill and recounts it.
    await respondBeside(BUYER, (follower) =>
      follower.query(
        `INSERT INTO onchain_feedback (chain_id, registry, agent_token_id, seller_id, client_address, feedback_index,
           value, value_decimals, tag1, tag2, endpoint, feedback_uri, feedback_hash, block_number, block_hash,
           tx_hash, log_index, review_id, verification)
         VALUES (84532, $1, 7, $2, $3, 1, 2, 0, 'starred', '', '', 'https://m.example/f', '0x00', 10, '0x01', '0x02', 0, $4, 'verified')`,
        [walletOf(0xfeed), sellerId(1), BUYER, reviewId],
      ),
    );
    const { rows } = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM onchain_feedback WHERE verification = 'verified'",
    );
    expect(rows[0]!.n).to.equal(1);
    expect(await rating()).to.equal(1);
  });

  it("a seller's response and another buyer's review of the same skill both commit", async () => {
    await respondBeside(SECOND_BUYER, (reviewer) =>
      reviewer.query(
        `INSERT INTO reviews (post_id, seller_id, buyer_address, payment_id, post_version, revision, rating, text,
                              issued_at, signature, feedback, feedback_hash)
         SELECT post_id, seller_id, buyer_address, payment_id, 1, 1, 5, 'Fast', now(), '0x02', '{}', '0x' || repeat('b', 64)
         FROM purchases WHERE buyer_address = $1`,
        [SECOND_BUYER],
      ),
    );
    expect(await rating()).to.equal(2);
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM review_responses');
    expect(rows[0]!.n).to.equal(2);
  });
});
