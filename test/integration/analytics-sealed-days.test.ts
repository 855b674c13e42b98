import { expect } from 'chai';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DB } from '../../src/data/schema.js';
import { refreshAgentAnalytics } from '../../src/domain/analytics/analytics.use-cases.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { recordSales } from '../support/ledger.js';

const SELLER = '00000000-0000-4000-8000-000000000001';
const ALPHA = '00000000-0000-4000-8000-0000000000aa';
const BETA = '00000000-0000-4000-8000-0000000000bb';
const buyer = (c: string) => `0x${c.repeat(40)}`;

/**
 * A seller's analytics read its days older than two from their sums (sealed once), and the ledger
 * only for the days after: the document equals the ledger whatever was sealed, a run reads two
 * days of sales, and a clock moving on seals the days it leaves behind.
 */
describe('seller analytics over sealed days', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let pool: pg.Pool;
  let db: Kysely<DB>;
  const now = new Date('2026-11-20T12:00:00.000Z');
  const daysAgo = (d: number, from = now) => new Date(from.getTime() - d * 86_400_000);
  const sale = (postId: string, who: string, at: Date, amountAtomic = 1_000_000) => ({
    postId,
    sellerId: SELLER,
    buyer: buyer(who),
    at,
    amountAtomic,
  });

  const summary = async (at: Date) => {
    const doc = await refreshAgentAnalytics(db, SELLER, at);
    if (!doc) throw new Error('no document');
    const funnel = Object.fromEntries(doc.funnel.map((f) => [f.postId, [f.settled, f.attempts, f.revenueAtomic]]));
    const daily = doc.daily.filter((d) => d.sales > 0).map((d) => [d.day, d.sales, d.revenueAtomic]);
    return { sales: doc.totals.sales, revenue: doc.totals.revenueAtomic, buyers: doc.buyers, funnel, daily };
  };

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('error', () => undefined); // idle clients of a database being dropped
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    await pool.query(
      `INSERT INTO agents (id, handle, wallet_address) VALUES ($1, 'sealed-seller', '0x${'1'.repeat(40)}')`,
      [SELLER],
    );
    for (const [id, title] of [
      [ALPHA, 'alpha'],
      [BETA, 'beta'],
    ])
      await pool.query(
        `INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name, created_at)
         VALUES ($1, $2, 'published', $3, 'p', 1000000, $4, $3, $4)`,
        [id, SELLER, title, daysAgo(200)],
      );
    // Buyer a bought 100 days ago (before the window) and 30 days ago; b 30 days ago and yesterday;
    // c three days ago; d today. One payment attempted 10 days ago was refused.
    await recordSales(pool, [
      sale(ALPHA, 'a', daysAgo(100)),
      sale(ALPHA, 'a', daysAgo(30), 2_000_000),
      sale(BETA, 'b', daysAgo(30)),
      sale(ALPHA, 'c', daysAgo(3)),
      sale(BETA, 'b', daysAgo(1), 3_000_000),
      sale(ALPHA, 'd', daysAgo(0.25)),
    ]);
    await recordSales(pool, [sale(BETA, 'e', daysAgo(10))], 'failed');
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('equals the ledger on the first run, which seals every day up to two days back', async () => {
    expect(await summary(now)).to.deep.equal({
      sales: 5,
      revenue: '8000000',
      buyers: { total: 4, new: 3, repeat: 1 },
      funnel: { [ALPHA]: [3, 3, '4000000'], [BETA]: [2, 3, '4000000'] },
      daily: [
        ['2026-10-21', 2, '3000000'],
        ['2026-11-17', 1, '1000000'],
        ['2026-11-19', 1, '3000000'],
        ['2026-11-20', 1, '1000000'],
      ],
    });
    const { rows } = await pool.query(`SELECT through::text FROM seller_analytics_sealed WHERE seller_id = $1`, [
      SELLER,
    ]);
    expect(rows).to.deep.equal([{ through: '2026-11-18' }]);
  });

  it("a sale today adds to the ledger's days; a returning buyer stays one buyer", async () => {
    await recordSales(pool, [sale(BETA, 'a', daysAgo(0.1), 500_000)]);
    const after = await summary(now);
    expect(after).to.deep.include({ sales: 6, revenue: '8500000', buyers: { total: 4, new: 3, repeat: 1 } });
    expect(after.funnel[BETA]).to.deep.equal([3, 4, '4500000']);
  });

  it('a sealed day is read from its sums, not from its sales again', async () => {
    // History rewritten behind the seal (it never is): the document keeps the sums it sealed.
    await pool.query(`UPDATE purchases SET amount_atomic = 9000000 WHERE buyer_address = $1 AND created_at < $2`, [
      buyer('b'),
      daysAgo(20).toISOString(),
    ]);
    expect((await summary(now)).revenue).to.equal('8500000');
    // Its sums forgotten, the next run sums the history again, as the ledger now says.
    await pool.query(`DELETE FROM seller_analytics_sealed WHERE seller_id = $1`, [SELLER]);
    expect((await summary(now)).revenue).to.equal('16500000');
  });

  it('while another run is sealing the seller, a run reads the days not sealed from the ledger and equals it', async () => {
    await pool.query(`DELETE FROM seller_analytics_sealed WHERE seller_id = $1`, [SELLER]);
    const sealer = await pool.connect();
    try {
      await sealer.query('BEGIN');
      await sealer.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 8004))`, [`analytics-seal:${SELLER}`]);
      expect(await summary(now)).to.deep.include({
        sales: 6,
        revenue: '16500000',
        buyers: { total: 4, new: 3, repeat: 1 },
      });
      const { rows } = await pool.query(`SELECT 1 FROM seller_analytics_sealed WHERE seller_id = $1`, [SELLER]);
      expect(rows, 'nothing sealed while the other run holds the seller').to.have.length(0);
    } finally {
      await sealer.query('ROLLBACK');
      sealer.release();
    }
  });

  it('as the clock moves on, the days it leaves behind are sealed and the document still equals the ledger', async () => {
    const later = new Date(now.getTime() + 5 * 86_400_000);
    expect(await summary(later)).to.deep.include({
      sales: 6,
      revenue: '16500000',
      buyers: { total: 4, new: 3, repeat: 1 },
    });
    const { rows } = await pool.query(`SELECT through::text FROM seller_analytics_sealed WHERE seller_id = $1`, [
      SELLER,
    ]);
    expect(rows).to.deep.equal([{ through: '2026-11-23' }]);
    // Buyer a's purchase today is in a sealed day now, and its first purchase still before the window.
    const { rows: buyers } = await pool.query(
      `SELECT buyer_address, first_day::text, last_day::text FROM seller_buyers WHERE seller_id = $1 ORDER BY buyer_address`,
      [SELLER],
    );
    expect(buyers.map((b) => [b.buyer_address.slice(2, 3), b.first_day, b.last_day])).to.deep.equal([
      ['a', '2026-08-12', '2026-11-20'],
      ['b', '2026-10-21', '2026-11-19'],
      ['c', '2026-11-17', '2026-11-17'],
      ['d', '2026-11-20', '2026-11-20'],
    ]);
    // 85 days later the sales of 30 days ago leave the window, and buyer b, whose last purchase
    // (yesterday, then) is still in it, is no longer new.
    const muchLater = new Date(now.getTime() + 85 * 86_400_000);
    expect(await summary(muchLater)).to.deep.include({
      sales: 4,
      revenue: '5500000',
      buyers: { total: 4, new: 2, repeat: 2 },
    });
    // A clock ahead of the database's seals no day the database does not put two days back.
    const { rows: capped } = await pool.query(
      `SELECT through <= (now() AT TIME ZONE 'UTC')::date - 2 AS ok FROM seller_analytics_sealed WHERE seller_id = $1`,
      [SELLER],
    );
    expect(capped).to.deep.equal([{ ok: true }]);
  });
});
