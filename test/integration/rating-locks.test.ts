import { expect } from 'chai';
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import type { Db } from '../../src/data/db.js';
import { markRevoked, upsertFeedback, type FeedbackRow } from '../../src/data/onchain-feedback.repository.js';
import { lockPostFirst } from '../../src/data/posts.repository.js';
import { settleRefund } from '../../src/data/refunds.repository.js';
import {
  insertResponse,
  insertReviewRevision,
  lockLatestReview,
  revokeLiveReview,
} from '../../src/data/reviews.repository.js';
import type { DB } from '../../src/data/schema.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { recordSales, seedSellers, sellerId, skillOf, walletOf } from '../support/ledger.js';
import { eventually } from '../support/service.js';

const SKILL = skillOf(1);
const SELLER = sellerId(1);
/** One buyer a case, so that no case depends on what another wrote. */
const BUYERS = [0xb0b, 0xca7, 0xd06, 0xe1c, 0xf00, 0x1ce, 0x5ea].map(walletOf);
const REGISTRY = walletOf(0xfeed);

/**
 * A skill's rating is recounted under a lock on the skill's row, and every write that changes what
 * it counts touches that row: a review, a seller's response, a settling refund, the Reputation
 * Registry follower's feedback. Whatever two of them meet on one skill, one waits for the other and
 * both commit; PostgreSQL never has to abort one as a deadlock (which a route answers 500).
 */
describe("a skill's rating recount beside other writes to the skill", function () {
  this.timeout(60_000);
  let opened: OpenTestDatabase;
  let pool: pg.Pool;
  /** Each buyer's live review of the skill. */
  const reviewOf = new Map<string, string>();

  before(async () => {
    opened = await openTestDatabase(4);
    pool = opened.pool;
    await seedSellers(pool, 1);
    await recordSales(
      pool,
      BUYERS.map((buyer) => ({ postId: SKILL, sellerId: SELLER, buyer, at: new Date() })),
    );
    const { rows } = await pool.query<{ id: string; buyer_address: string }>(
      `INSERT INTO reviews (post_id, seller_id, buyer_address, payment_id, post_version, revision, rating, text,
                            issued_at, signature, feedback, feedback_hash)
       SELECT post_id, seller_id, buyer_address, payment_id, 1, 1, 2, 'Slow', now(), '0x0' || n, '{}',
              '0x' || lpad(to_hex(n), 64, '0')
       FROM (SELECT *, row_number() OVER (ORDER BY buyer_address) AS n FROM purchases) p
       RETURNING id, buyer_address`,
    );
    for (const r of rows) reviewOf.set(r.buyer_address, r.id);
  });
  after(() => opened?.close());

  /** The repository's functions on one session (its open transaction). */
  const on = (client: pg.PoolClient): Db =>
    new Kysely<DB>({
      dialect: new PostgresDialect({
        pool: {
          connect: async () => ({ query: client.query.bind(client), release: () => undefined }),
          end: async () => {},
        },
      } as never),
    });
  const pidOf = (client: pg.PoolClient) => (client as unknown as { processID: number }).processID;
  /** Resolves once `work` has finished or its session waits for a lock, whichever comes first. */
  const finishedOrBlocked = async (client: pg.PoolClient, work: Promise<unknown>) => {
    let done = false;
    void work.then(
      () => (done = true),
      () => (done = true),
    );
    await eventually(
      async () => {
        if (done) return true;
        const { rows } = await pool.query(
          // Waiting for another transaction's row lock (not, say, a moment's relation extension).
          "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')",
          [pidOf(client)],
        );
        return rows.length > 0 || undefined;
      },
      10_000,
      20,
    );
  };

  /**
   * Session A runs `first` (to its end), session B runs `other` until it ends or waits for a lock,
   * then A runs `then`: both sessions must commit.
   */
  async function bothCommit(
    first: (a: pg.PoolClient) => Promise<unknown>,
    other: (b: pg.PoolClient) => Promise<unknown>,
    then: (a: pg.PoolClient) => Promise<unknown>,
  ) {
    const a = await pool.connect();
    const b = await pool.connect();
    try {
      await a.query('BEGIN');
      await first(a);
      await b.query('BEGIN');
      const otherDone = other(b);
      await finishedOrBlocked(b, otherDone);
      const thenDone = then(a);
      await finishedOrBlocked(a, thenDone);
      const outcomes = await Promise.allSettled([
        otherDone.then(() => b.query('COMMIT')),
        thenDone.then(() => a.query('COMMIT')),
      ]);
      expect(outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'committed'))).to.deep.equal([
        'committed',
        'committed',
      ]);
    } finally {
      for (const c of [a, b]) {
        await c.query('ROLLBACK').catch(() => undefined);
        c.release();
      }
    }
  }

  /** What a response's insert takes first: its foreign-key check's lock on the skill's row. */
  const keyShare = (a: pg.PoolClient) => a.query('SELECT 1 FROM posts WHERE id = $1 FOR KEY SHARE', [SKILL]);
  /** What a write that marks the skill changed takes first (its trigger's update of the skill's row). */
  const touch = (a: pg.PoolClient) =>
    a.query('UPDATE posts SET change_txid = pg_current_xact_id() WHERE id = $1', [SKILL]);
  const respond = (buyer: string) => (a: pg.PoolClient) =>
    insertResponse(on(a), { post_id: SKILL, buyer_address: buyer, seller_id: SELLER, text: 'We fixed it.' });
  const feedbackOf = (buyer: string, index: number, reviewId: string | null): FeedbackRow => ({
    chain_id: '84532',
    registry: REGISTRY,
    agent_token_id: '7',
    seller_id: SELLER,
    client_address: buyer,
    feedback_index: String(index),
    value: '2',
    value_decimals: 0,
    tag1: 'starred',
    tag2: '',
    endpoint: '',
    feedback_uri: 'https://market.example/f',
    feedback_hash: `0x${'0'.repeat(63)}${index}`,
    block_number: '10',
    block_hash: `0x${'1'.repeat(64)}`,
    tx_hash: `0x${'2'.repeat(64)}`,
    log_index: index,
    review_id: reviewId,
    verification: reviewId ? 'verified' : 'unverified',
    reason: reviewId ? null : 'no_review',
  });
  /** A refund of `buyer`'s purchase, relayed and waiting to be recorded as settled. */
  const relayingRefund = async (buyer: string) => {
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO refunds (payment_id, post_id, seller_id, buyer_address, from_address, amount_atomic, asset, network,
                            nonce, authorization_payload)
       SELECT payment_id, post_id, seller_id, buyer_address, $2, amount_atomic, '0xa', 'eip155:84532',
              '0x' || md5(buyer_address) || md5(payment_id::text), '{}'
       FROM purchases WHERE buyer_address = $1 RETURNING id`,
      [buyer, walletOf(1)],
    );
    return rows[0]!.id;
  };
  const settle = (refundId: string) => (a: pg.PoolClient) =>
    settleRefund(on(a), {
      refundId,
      txHash: `0x${'3'.repeat(64)}`,
      settledAt: new Date(),
      receiptSignature: '0x04',
    });
  const count = async (query: string, params: unknown[]) =>
    (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${query}) q`, params)).rows[0]!.n;

  it("a seller's response and the follower's verified feedback on the same skill both commit", async () => {
    const buyer = BUYERS[0]!;
    await bothCommit(
      keyShare,
      (b) => upsertFeedback(on(b), feedbackOf(buyer, 1, reviewOf.get(buyer)!)),
      respond(buyer),
    );
    expect(
      await count("SELECT 1 FROM onchain_feedback WHERE client_address = $1 AND verification = 'verified'", [buyer]),
    ).to.equal(1);
    expect(await count('SELECT 1 FROM review_responses WHERE buyer_address = $1', [buyer])).to.equal(1);
  });

  it("a seller's response and another buyer's edited review of the same skill both commit", async () => {
    const [responded, reviewer] = [BUYERS[1]!, BUYERS[2]!];
    await bothCommit(
      keyShare,
      async (b) => {
        const latest = await lockLatestReview(on(b), SKILL, reviewer);
        const { rows } = await b.query('SELECT payment_id FROM purchases WHERE buyer_address = $1', [reviewer]);
        await insertReviewRevision(on(b), {
          post_id: SKILL,
          seller_id: SELLER,
          buyer_address: reviewer,
          buyer_agent_id: null,
          payment_id: rows[0].payment_id,
          post_version: 1,
          revision: (latest?.revision ?? 0) + 1,
          rating: 5,
          text: 'Fast now',
          issued_at: new Date(),
          signature: '0xed17',
          feedback: '{}',
          feedback_hash: `0x${'e'.repeat(64)}`,
        });
      },
      respond(responded),
    );
    const { rows } = await pool.query('SELECT rating FROM reviews WHERE buyer_address = $1 AND status = $2', [
      reviewer,
      'live',
    ]);
    expect(rows).to.deep.equal([{ rating: 5 }]);
    expect(await count('SELECT 1 FROM review_responses WHERE buyer_address = $1', [responded])).to.equal(1);
  });

  it("a seller's response and a refund settling on the same skill both commit", async () => {
    const buyer = BUYERS[3]!;
    const refund = await relayingRefund(buyer);
    await bothCommit(keyShare, settle(refund), respond(buyer));
    expect(
      await count('SELECT 1 FROM purchases WHERE buyer_address = $1 AND refunded_at IS NOT NULL', [buyer]),
    ).to.equal(1);
    expect(await count('SELECT 1 FROM review_responses WHERE buyer_address = $1', [buyer])).to.equal(1);
  });

  it('an edit of a review and the follower recording feedback on it, in a pass that touched the skill, both commit', async () => {
    const buyer = BUYERS[4]!;
    await bothCommit(
      // The follower's pass: an earlier event of it touched the skill.
      touch,
      async (b) => {
        const latest = await lockLatestReview(on(b), SKILL, buyer);
        await insertReviewRevision(on(b), {
          post_id: SKILL,
          seller_id: SELLER,
          buyer_address: buyer,
          buyer_agent_id: null,
          payment_id: latest!.payment_id,
          post_version: 1,
          revision: latest!.revision + 1,
          rating: 4,
          text: 'Better',
          issued_at: new Date(),
          signature: '0xed18',
          feedback: '{}',
          feedback_hash: `0x${'f'.repeat(64)}`,
        });
      },
      (a) => upsertFeedback(on(a), feedbackOf(buyer, 5, reviewOf.get(buyer)!)),
    );
    expect(await count('SELECT 1 FROM reviews WHERE buyer_address = $1', [buyer])).to.equal(2);
    expect(await count('SELECT 1 FROM onchain_feedback WHERE client_address = $1', [buyer])).to.equal(1);
  });

  it('a refund settling and the follower recording the revocation of its feedback both commit', async () => {
    // The buyer's review has verified feedback, which the refund unverifies.
    const buyer = BUYERS[5]!;
    const seeding = await pool.connect();
    await upsertFeedback(on(seeding), feedbackOf(buyer, 1, reviewOf.get(buyer)!)).finally(() => seeding.release());
    const refund = await relayingRefund(buyer);
    await bothCommit(
      // The refund's statement touches the skill (its trigger) before it unverifies the feedback.
      touch,
      (b) =>
        markRevoked(
          on(b),
          { chainId: '84532', registry: REGISTRY, agentTokenId: '7', client: buyer, index: '1' },
          '11',
          `0x${'5'.repeat(64)}`,
        ),
      settle(refund),
    );
    const { rows } = await pool.query(
      'SELECT verification, reason, revoked_block_number::int AS revoked FROM onchain_feedback WHERE client_address = $1',
      [buyer],
    );
    expect(rows).to.deep.equal([{ verification: 'unverified', reason: 'purchase_refunded', revoked: 11 }]);
  });

  it('a revocation of a review and the follower recording feedback on it, in a pass that touched the skill, both commit', async () => {
    const buyer = BUYERS[6]!;
    await bothCommit(
      touch,
      // What revokeReview does: the skill first, then the review, whose revocation signature (a
      // unique column) locks it against the follower's foreign key.
      async (b) => {
        await lockPostFirst(on(b), SKILL);
        await revokeLiveReview(on(b), reviewOf.get(buyer)!, new Date(), '0x7e70');
      },
      (a) => upsertFeedback(on(a), feedbackOf(buyer, 7, reviewOf.get(buyer)!)),
    );
    expect(await count("SELECT 1 FROM reviews WHERE buyer_address = $1 AND status = 'revoked'", [buyer])).to.equal(1);
    expect(await count('SELECT 1 FROM onchain_feedback WHERE client_address = $1', [buyer])).to.equal(1);
  });
});
