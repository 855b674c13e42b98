import { expect } from 'chai';
import type pg from 'pg';
import { readSkillPageFigures } from '../../src/data/posts.repository.js';
import type { Db } from '../../src/data/db.js';
import { loadActivityAggregates } from '../../src/data/scoring.repository.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { captureStatements, tableScans } from '../support/explain.js';
import {
  recordSales,
  seedSellers,
  sellerId as agentId,
  skillOf as postOf,
  walletOf as wallet,
} from '../support/ledger.js';

const DAY = 86_400_000;

/**
 * What a sale to a large seller re-reads: the seller's sales figures (its score's facts) and its
 * skill's sales and buyers (the skill's page). Both count every purchase of the seller or the
 * skill; the indexes carry what they count, so neither reads a purchase's table row.
 */
describe("a seller's and a skill's sales counts", function () {
  this.timeout(120_000);
  let opened: OpenTestDatabase;
  let pool: pg.Pool;
  let db: Db;

  before(async () => {
    opened = await openTestDatabase();
    ({ pool, db } = opened);
    await seedSellers(pool, 100);
    // 400 sales a seller in the last day, to 300 wallets (the first 100 of them twice), and one
    // sale 100 days ago to a wallet of its own: 40,100 purchases in all.
    for (let seller = 1; seller <= 100; seller++) {
      await recordSales(pool, [
        ...Array.from({ length: 400 }, (_, i) => ({
          postId: postOf(seller),
          sellerId: agentId(seller),
          buyer: wallet(seller * 1_000 + (i % 300)),
          at: new Date(Date.now() - (i + 1) * 60_000),
        })),
        {
          postId: postOf(seller),
          sellerId: agentId(seller),
          buyer: wallet(900_000 + seller),
          at: new Date(Date.now() - 100 * DAY),
        },
      ]);
    }
    // What autovacuum does on a live database: the pages are marked all-visible.
    await pool.query('VACUUM ANALYZE purchases');
  });
  after(() => opened?.close());

  it("a seller's score facts count its sales and buyers from the index alone", async () => {
    const now = Date.now();
    const { result, statements } = await captureStatements('per_buyer', () =>
      loadActivityAggregates(db, [agentId(7)], { short: new Date(now - 30 * DAY), long: new Date(now - 90 * DAY) }),
    );
    expect(result.sales).to.have.length(1);
    expect(result.sales[0]).to.include({
      settlements_all: 401,
      settlements_90d: 400,
      buyers_90d: 300,
      repeat_buyers_90d: 100,
      agent_buyers_90d: 0,
      revenue_90d: String(400 * 1_000_000),
    });
    expect(statements).to.have.length(1);
    const scans = await tableScans(pool, statements[0]!, 'purchases');
    expect(scans.map((s) => [s.type, s.index, s.heapFetches])).to.deep.equal([
      ['Index Only Scan', 'purchases_seller_activity_idx', 0],
    ]);
    expect(scans[0]!.rows).to.equal(401);
  });

  it("a skill's page counts its sales and buyers from the index alone", async () => {
    const { result, statements } = await captureStatements('count(DISTINCT u.buyer_address)', () =>
      readSkillPageFigures(db, postOf(7)),
    );
    expect(result).to.deep.equal({ sales: 401, buyers: 301 });
    expect(statements).to.have.length(1);
    const scans = await tableScans(pool, statements[0]!, 'purchases');
    expect(scans.map((s) => [s.type, s.index, s.heapFetches])).to.deep.equal([
      ['Index Only Scan', 'purchases_post_covering_idx', 0],
      ['Index Only Scan', 'purchases_post_covering_idx', 0],
    ]);
  });
});
