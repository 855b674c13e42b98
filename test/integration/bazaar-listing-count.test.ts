import { expect } from 'chai';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import {
  countListings,
  dropUnlistedListings,
  writeListings,
  type ListingRow,
} from '../../src/data/discovery.repository.js';
import type { DB } from '../../src/data/schema.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { captureStatements } from '../support/explain.js';
import { seedSellers, sellerId, skillOf, walletOf } from '../support/ledger.js';

const listing = (n: number, buyers = 0): ListingRow => ({
  postId: skillOf(n),
  sellerId: sellerId(n),
  sellerKey: 'k',
  payTo: walletOf(n),
  amountAtomic: '1000000',
  categories: [],
  sellerHealth: 'dormant',
  buyers,
  item: { resource: `https://market.example/api/posts/${skillOf(n)}`, buyers },
});

/**
 * The Bazaar's unfiltered list states how many listings there are on every page a crawler reads.
 * That total is kept as listings are added and dropped, and read without counting the listings.
 */
describe("the Bazaar's listing total", function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let pool: pg.Pool;
  let db: Kysely<DB>;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('error', () => undefined); // idle clients of a database being dropped
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    await seedSellers(pool, 6);
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const counted = async () =>
    (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM bazaar_listings')).rows[0]!.n;

  it('follows every listing added, updated and dropped, without reading the listings', async () => {
    const steps: Array<[string, () => Promise<unknown>]> = [
      [
        'five skills listed',
        () =>
          writeListings(
            db,
            [1, 2, 3, 4, 5].map((n) => listing(n)),
            [],
          ),
      ],
      // An upsert that changes listings and adds one: only the new one counts.
      [
        'three listings changed and a sixth listed',
        () =>
          writeListings(
            db,
            [1, 2, 6].map((n) => listing(n, 3)),
            [],
          ),
      ],
      ['two dropped', () => writeListings(db, [], [skillOf(1), skillOf(2)])],
      [
        'one skill unpublished, its listing dropped at the end of a rebuild',
        async () => {
          await pool.query("UPDATE posts SET status = 'draft' WHERE id = $1", [skillOf(3)]);
          await dropUnlistedListings(db);
        },
      ],
      ['one skill deleted with its listing', () => pool.query('DELETE FROM posts WHERE id = $1', [skillOf(4)])],
    ];
    const seen: Array<[string, number, number]> = [];
    for (const [step, run] of steps) {
      await run();
      const { result, statements } = await captureStatements('bazaar_listings', () => countListings(db, {}));
      expect(statements, `${step}: the total reads no listing`).to.deep.equal([]);
      seen.push([step, result, await counted()]);
    }
    expect(seen.map(([step, kept]) => [step, kept])).to.deep.equal(seen.map(([step, , actual]) => [step, actual]));
    expect(seen.map(([, kept]) => kept)).to.deep.equal([5, 6, 4, 3, 2]);
  });

  it('still counts the listings a filter keeps', async () => {
    await writeListings(db, [listing(5), listing(6, 3)], []);
    expect(await countListings(db, { payTo: walletOf(5) })).to.equal(1);
    expect(await countListings(db, { minBuyers: 3 })).to.equal(1);
  });
});
