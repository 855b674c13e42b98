import { expect } from 'chai';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DB } from '../../src/data/schema.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { loadFactsMany } from '../../src/domain/scoring/load-facts.js';
import {
  loadPopulationValues,
  measurePopulationQuantiles,
  measureSalesQuantiles,
} from '../../src/data/population.repository.js';
import { readTopSellersSince, readTrendingTags, refreshTagStats } from '../../src/data/scoring.repository.js';
import { findRecentSales } from '../../src/data/posts.repository.js';
import { readBuyerOverlap } from '../../src/data/similarity.repository.js';
import { readListedSourcesPage } from '../../src/data/discovery.repository.js';
import { writeNextSearchTier } from '../../src/data/search-tier.repository.js';

const SELLER = '00000000-0000-4000-8000-000000000001';
const OTHER = '00000000-0000-4000-8000-000000000002';
const BUYER = '00000000-0000-4000-8000-000000000003';
const SELLER_WALLET = `0x${'1'.repeat(40)}`;
const OTHER_WALLET = `0x${'2'.repeat(40)}`;
const BUYER_WALLET = `0x${'3'.repeat(40)}`;
const SELF_BOUGHT = '00000000-0000-4000-8000-0000000000aa';
const SOLD_TO_OTHERS = '00000000-0000-4000-8000-0000000000bb';

/**
 * Every figure the marketplace counts sales in, read from the same purchases: a seller that bought
 * its own skill three times from its own wallet, and another seller whose skill was bought by a
 * buyer agent and by that first seller. The first seller's purchases of its own skill are recorded
 * and count nowhere; its purchase of the other seller's skill is a sale like any other.
 */
describe("a seller's purchases of its own skills, in every figure that counts sales", function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let pool: pg.Pool;
  let db: Kysely<DB>;
  const now = new Date();
  const ago = (hours: number) => new Date(now.getTime() - hours * 3_600_000);

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('error', () => undefined); // idle clients of a database being dropped
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    await pool.query(
      `INSERT INTO agents (id, handle, wallet_address) VALUES
         ($1, 'own-seller', $4), ($2, 'own-other', $5), ($3, 'own-buyer', $6)`,
      [SELLER, OTHER, BUYER, SELLER_WALLET, OTHER_WALLET, BUYER_WALLET],
    );
    // Both listed ten days ago (outside the tag trend's week), the self-bought one a little later.
    for (const [id, author, tag, at] of [
      [SELF_BOUGHT, SELLER, 'self-bought', ago(240)],
      [SOLD_TO_OTHERS, OTHER, 'sold-to-others', ago(241)],
    ] as const) {
      await pool.query(
        `INSERT INTO posts (id, author_id, status, title, preview, price_atomic, tags, published_at, first_published_at, skill_name)
         VALUES ($1, $2, 'published', $3, 'p', 1000000, ARRAY[$3], $4, $4, $3)`,
        [id, author, tag, at],
      );
      await pool.query(
        `INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
         VALUES ($1, 1, '1.0.0', '{"files":[]}', 'x', 0, $2, skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}'))`,
        [id, tag],
      );
    }
    const sales: Array<[post: string, payTo: string, buyer: string, buyerAgent: string, at: Date]> = [
      [SELF_BOUGHT, SELLER_WALLET, SELLER_WALLET, SELLER, ago(1)],
      [SELF_BOUGHT, SELLER_WALLET, SELLER_WALLET, SELLER, ago(2)],
      [SELF_BOUGHT, SELLER_WALLET, SELLER_WALLET, SELLER, ago(3)],
      [SOLD_TO_OTHERS, OTHER_WALLET, BUYER_WALLET, BUYER, ago(1)],
      [SOLD_TO_OTHERS, OTHER_WALLET, SELLER_WALLET, SELLER, ago(2)],
    ];
    for (const [n, [post, payTo, buyer, buyerAgent, at]] of sales.entries()) {
      const id = `00000000-0000-4000-8000-00000000010${n}`;
      const seller = post === SELF_BOUGHT ? SELLER : OTHER;
      await pool.query(
        `INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, created_at, updated_at, settled_at)
         VALUES ($1::uuid, 'purchase', 'settled', 2, 'eip155:84532', '0x${'0'.repeat(39)}a', $2, $3, 1000000, '0x' || md5($1::text) || md5('n' || $1::text),
                 $5::timestamptz - interval '1 minute', $5::timestamptz + interval '5 minutes', 'https://market.example/api/posts/x', $4,
                 '0x' || md5('tx' || $1::text) || md5('t' || $1::text), '{}', '{}', $5, $5, $5)`,
        [id, buyer, payTo, post, at],
      );
      await pool.query(
        `INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at, skill_digest)
         VALUES ($1::uuid, $2, 1, $3, $4, $5, 1000000, '0x' || md5('tx' || $1::text) || md5('t' || $1::text), $6, skill_digest('{"files":[]}'))`,
        [id, post, seller, buyer, buyerAgent, at],
      );
    }
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('score inputs: no settlement, buyer, repeat buyer, revenue or last sale for the self-buying seller; both sales for the other', async () => {
    const agents = await db
      .selectFrom('agents')
      .selectAll()
      .where('id', 'in', [SELLER, OTHER])
      .orderBy('handle')
      .execute();
    const [other, seller] = await loadFactsMany(
      db,
      agents.map((agent) => ({ agent, identity: null })),
      now,
    );
    expect(seller).to.include({
      handle: 'own-seller',
      settlementCount90d: 0,
      settlementCountAll: 0,
      uniqueBuyers90d: 0,
      repeatBuyers90d: 0,
      agentBuyers90d: 0,
      lastSettleAt: null,
    });
    expect(seller!.revenueAtomic90d).to.equal(0n);
    expect(other).to.include({
      handle: 'own-other',
      settlementCount90d: 2,
      uniqueBuyers90d: 2,
      repeatBuyers90d: 0,
      agentBuyers90d: 2,
    });
    expect(other!.revenueAtomic90d).to.equal(2_000_000n);
  });

  it('population percentiles rank only sales to others', async () => {
    const since = ago(90 * 24);
    expect(await loadPopulationValues(db, 'settlements', since)).to.deep.equal([2]);
    expect(await loadPopulationValues(db, 'uniqueBuyers', since)).to.deep.equal([2]);
  });

  it("both sales quantiles read at once are each metric's own, the own purchases left out", async () => {
    const since = ago(90 * 24);
    const fractions = [0, 0.5, 1];
    // Rolled back after: a repeat purchase by the buyer agent, so the other seller's sales (3)
    // differ from its buyers (2), and the buyer's purchase of the first seller's skill, its one
    // sale to another (1 buyer, 1 sale): two sellers to pick quantiles from.
    const rollback = new Error('rollback');
    const measured = await db
      .transaction()
      .execute(async (trx) => {
        for (const [id, post, seller, payTo] of [
          ['00000000-0000-4000-8000-0000000001fe', SOLD_TO_OTHERS, OTHER, OTHER_WALLET],
          ['00000000-0000-4000-8000-0000000001ff', SELF_BOUGHT, SELLER, SELLER_WALLET],
        ] as const) {
          await sql`INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, created_at, updated_at, settled_at)
            VALUES (${id}::uuid, 'purchase', 'settled', 2, 'eip155:84532', ${`0x${'0'.repeat(39)}a`}, ${BUYER_WALLET}, ${payTo}, 1000000, '0x' || md5(${id}::text) || md5('n' || ${id}::text),
                    now() - interval '1 minute', now() + interval '5 minutes', 'https://market.example/api/posts/x', ${post},
                    '0x' || md5('tx' || ${id}::text) || md5('t' || ${id}::text), '{}', '{}', now(), now(), now())`.execute(
            trx,
          );
          await sql`INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at, skill_digest)
            VALUES (${id}::uuid, ${post}, 1, ${seller}, ${BUYER_WALLET}, ${BUYER}, 1000000, '0x' || md5('tx' || ${id}::text) || md5('t' || ${id}::text), now(), skill_digest('{"files":[]}'))`.execute(
            trx,
          );
        }
        const both = await measureSalesQuantiles(trx, since, fractions);
        const apart = {
          uniqueBuyers: await measurePopulationQuantiles(trx, 'uniqueBuyers', since, fractions),
          settlements: await measurePopulationQuantiles(trx, 'settlements', since, fractions),
        };
        throw Object.assign(rollback, { both, apart });
      })
      .catch((err: unknown) => {
        if (err !== rollback) throw err;
        return err as Error & { both: unknown; apart: unknown };
      });
    expect(measured.both).to.deep.equal({
      uniqueBuyers: { breakpoints: [1, 1, 2], n: 2 },
      settlements: { breakpoints: [1, 1, 3], n: 2 },
    });
    expect(measured.both).to.deep.equal(measured.apart);
  });

  it('trending agents and trending tags leave the self-bought sales out', async () => {
    expect(await readTopSellersSince(db, ago(72), 100, 1.96)).to.deep.equal([
      { handle: 'own-other', display_name: null, sales: 2, buyers: 2, revenue: '2000000' },
    ]);
    // Only the candidates asked for leave the database.
    expect(await readTopSellersSince(db, ago(72), 0, 1.96)).to.deep.equal([]);
    await refreshTagStats(db, ago(7 * 24), { paidPurchase: 3, published: 1 });
    const trending = await readTrendingTags(db, 100);
    expect(trending.map((t) => [t.tag, t.score_7d])).to.deep.equal([['sold-to-others', 6]]);
  });

  it('the reputation mirror lists only sales to others', async () => {
    const sales = await findRecentSales(db, [SELLER, OTHER], 100);
    expect(sales.map((s) => [s.seller_id, s.buyer_address])).to.deep.equal([
      [OTHER, BUYER_WALLET],
      [OTHER, SELLER_WALLET],
    ]);
  });

  it("a seller's own wallet is not one of its buyers, so it makes no buyer overlap with the sellers it bought from", async () => {
    expect(await readBuyerOverlap(db, [SELLER, OTHER], { sample: 10, perBuyer: 10, candidates: 10 }, 10)).to.deep.equal(
      [],
    );
  });

  it('the x402 Bazaar listing counts distinct buyers other than the seller', async () => {
    const listed = await readListedSourcesPage(db, '00000000-0000-0000-0000-000000000000', 100);
    const buyers = Object.fromEntries(listed.map((l) => [l.id, l.buyers]));
    expect(buyers).to.deep.equal({ [SELF_BOUGHT]: 0, [SOLD_TO_OTHERS]: 2 });
  });

  it('the search tier ranks skills by sales to others: three self-purchases rank below two real sales', async () => {
    const tier = await db.transaction().execute(async (trx) => {
      await writeNextSearchTier(trx, { size: 1, recentSince: now, salesSince: ago(90 * 24) });
      const { rows } = await sql<{ post_id: string }>`SELECT post_id FROM search_tier_posts_next`.execute(trx);
      await sql`DROP TABLE search_tier_posts_next`.execute(trx);
      return rows.map((r) => r.post_id);
    });
    expect(tier).to.deep.equal([SOLD_TO_OTHERS]);
  });
});
