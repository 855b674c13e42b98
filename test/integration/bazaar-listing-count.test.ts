import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import {
  countListings,
  dropUnlistedListings,
  writeListings,
  type ListingRow,
} from '../../src/data/discovery.repository.js';
import type { Db } from '../../src/data/db.js';
import { migrate } from '../../src/data/migrate.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { captureStatements } from '../support/explain.js';
import { eventually } from '../support/service.js';
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
  let opened: OpenTestDatabase;
  let pool: pg.Pool;
  let db: Db;

  before(async () => {
    opened = await openTestDatabase(4);
    ({ pool, db } = opened);
    await seedSellers(pool, 7);
  });
  after(() => opened?.close());

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

  it('starts from the listings already there, those of a projector pass still running included', async () => {
    const file = '0044_bazaar_listing_count.sql';
    // The database as it stood before the count: the listings of the cases above are there.
    await pool.query(`DROP TABLE bazaar_listing_count;
      DROP TRIGGER bazaar_listings_added ON bazaar_listings; DROP TRIGGER bazaar_listings_dropped ON bazaar_listings;
      DROP FUNCTION count_added_listings(); DROP FUNCTION count_dropped_listings();
      DELETE FROM schema_migrations WHERE name = '${file}'`);
    const dir = mkdtempSync(join(tmpdir(), 'migrations-'));
    copyFileSync(join(import.meta.dirname, '../../src/data/migrations', file), join(dir, file));
    // A projector pass has written a listing and not committed yet when the migration starts.
    const writer = await pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO bazaar_listings (post_id, seller_id, seller_key, pay_to, amount_atomic, categories, seller_health, buyers, listed_at, item)
         VALUES ($1, $2, 'k', $3, 1000000, '{}', 'dormant', 0, now(), '{}')`,
        [skillOf(7), sellerId(7), walletOf(7)],
      );
      const migrating = migrate(pool, { dir, lockTimeoutMs: 30_000 });
      // The migration waits for the pass's lock on the listings before it counts them.
      await eventually(
        async () =>
          (
            await pool.query(
              "SELECT 1 FROM pg_stat_activity WHERE pid <> $1 AND wait_event_type = 'Lock' AND query LIKE '%bazaar_listing_count%'",
              [(writer as unknown as { processID: number }).processID],
            )
          ).rows.length > 0 || undefined,
        10_000,
        20,
      );
      await writer.query('COMMIT');
      expect(await migrating).to.deep.equal([file]);
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      writer.release();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await countListings(db, {})).to.equal(await counted());
    expect(await counted()).to.be.greaterThan(1);
  });
});
