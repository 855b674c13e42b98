import { expect } from 'chai';
import type pg from 'pg';
import type { Db } from '../../src/data/db.js';
import { readBuyerOverlap } from '../../src/data/similarity.repository.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { captureStatements, tableScans, type TableScan } from '../support/explain.js';
import {
  recordSales,
  seedSellers,
  sellerId as agentId,
  skillOf as postOf,
  walletOf as wallet,
} from '../support/ledger.js';

/**
 * The similar list's fallback for an agent sharing no features with another: the Jaccard index of
 * two sellers' recent buyers. It reads a bounded number of purchases however many a seller has,
 * so one sale to a large seller costs what a sale to a small one does.
 */
describe('similar sellers by buyer overlap', function () {
  this.timeout(120_000);
  let opened: OpenTestDatabase;
  let pool: pg.Pool;
  let db: Db;

  /** Records sales of `seller`'s one skill to the buyer wallets given, `minutesAgo` each. */
  const sell = (seller: number, sales: Array<[buyer: number, minutesAgo: number]>) =>
    recordSales(
      pool,
      sales.map(([buyer, ago]) => ({
        postId: postOf(seller),
        sellerId: agentId(seller),
        buyer: wallet(buyer),
        at: new Date(Date.now() - ago * 60_000),
      })),
    );

  const overlap = async (sellers: number[], bounds = { sample: 200, perBuyer: 20, candidates: 100 }) =>
    (await readBuyerOverlap(db, sellers.map(agentId), bounds, 10)).map((o) => [
      o.of === agentId(sellers[0]!) ? o.handle.replace('seller-', '') : `${o.of}>${o.handle}`,
      o.similarity,
    ]);

  const purchasesRead = (scans: TableScan[]) => scans.reduce((sum, s) => sum + s.rows + s.removed, 0);

  /** `seller`'s overlap, and the scans of purchases its statement makes, from `EXPLAIN ANALYZE`. */
  async function overlapExplained(seller: number) {
    const { result: found, statements } = await captureStatements('their_size', () => overlap([seller]));
    expect(statements).to.have.length(1);
    return { found: found as Array<[string, number]>, scans: await tableScans(pool, statements[0]!, 'purchases') };
  }

  before(async () => {
    opened = await openTestDatabase();
    ({ pool, db } = opened);
    await seedSellers(pool, 300);
  });
  after(() => opened?.close());

  it('is the Jaccard index of all their buyers for sellers with fewer sales than the sample', async () => {
    // Seller 1 sold to wallets 1001-1003 (1001 twice); seller 2 to 1001-1002; seller 3 to 1003-1006.
    await sell(1, [
      [1001, 5],
      [1001, 4],
      [1002, 3],
      [1003, 2],
    ]);
    await sell(2, [
      [1001, 5],
      [1002, 4],
    ]);
    await sell(3, [
      [1003, 5],
      [1004, 4],
      [1005, 3],
      [1006, 2],
    ]);
    const found = await overlap([1]);
    expect(found.map(([h]) => h)).to.deep.equal(['2', '3']);
    expect(found[0]![1]).to.be.closeTo(2 / 3, 1e-12);
    expect(found[1]![1]).to.be.closeTo(1 / 6, 1e-12);
  });

  it("counts only each seller's last sales' buyers: older buyers in common make no overlap", async () => {
    // Seller 10's sale to 2001 is older than its last three; seller 11 sold to 2001 only.
    // Seller 12 sold to 3001 (seller 10's recent buyer) before its own last three sales.
    await sell(10, [
      [2001, 50],
      [3001, 4],
      [3002, 3],
      [3003, 2],
    ]);
    await sell(11, [[2001, 5]]);
    await sell(12, [
      [3001, 40],
      [4001, 3],
      [4002, 2],
      [4003, 1],
    ]);
    await sell(13, [[3002, 5]]);
    const bounds = { sample: 3, perBuyer: 20, candidates: 100 };
    const found = await overlap([10], bounds);
    expect(found.map(([h]) => h)).to.deep.equal(['13']);
    expect(found[0]![1]).to.be.closeTo(1 / 3, 1e-12);
    // With a sample reaching back far enough, both come back.
    expect((await overlap([10])).map(([h]) => h)).to.have.members(['11', '12', '13']);
  });

  it('reads the purchases it needs through the indexes, however many there are', async () => {
    // 60,000 sales: seller 100 sold to 20,000 wallets, each of which bought from 2 of sellers 101-300.
    const big: Array<[number, number]> = [];
    for (let b = 0; b < 20_000; b++) big.push([100_000 + b, 1 + (b % 1000)]);
    await sell(100, big);
    for (let s = 101; s <= 300; s++) {
      const sales: Array<[number, number]> = [];
      for (let b = 0; b < 20_000; b++)
        if (b % 200 === s - 101 || (b + 77) % 200 === s - 101) sales.push([100_000 + b, 2]);
      await sell(s, sales);
    }
    await pool.query('ANALYZE purchases');
    const { found, scans } = await overlapExplained(100);
    // Every one of sellers 101-300 shares 200 of seller 100's 20,000 buyers; its last sales are a
    // sample of its 200 own, and so is seller 100's: the overlap is that of the two samples.
    expect(found).to.have.length(10);
    for (const [, similarity] of found) expect(similarity).to.be.within(0, 1);
    expect(scans.map((s) => s.type)).to.not.include('Seq Scan');
    // Rows read from purchases in all: bounded by the sample, the purchases read per buyer and the
    // candidates (200 + 200 × 100 × 2 + 100 × 200), not by the 60,000 sales.
    expect(purchasesRead(scans))
      .to.be.above(0)
      .and.at.most(200 + 200 * 100 * 2 + 100 * 200);
  });

  it('a wholesale buyer, who bought one skill thousands of times, is read a hundred purchases deep', async () => {
    // Seller 50's one buyer bought seller 51's skill 3,000 times.
    await sell(50, [[900_000, 10]]);
    await sell(
      51,
      Array.from({ length: 3_000 }, () => [900_000, 5] as [number, number]),
    );
    await pool.query('ANALYZE purchases');
    const { found, scans } = await overlapExplained(50);
    expect(found.map(([h]) => h)).to.deep.equal(['51']);
    // Seller 50's sale, at most 100 of its buyer's purchases a side, and seller 51's last 200 sales.
    expect(purchasesRead(scans)).to.be.at.most(1 + 2 * 100 + 200);
  });
});
