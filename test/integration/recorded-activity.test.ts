import { expect } from 'chai';
import type pg from 'pg';
import type { Db } from '../../src/data/db.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { loadFactsMany, loadFactsRecorded } from '../../src/domain/scoring/load-facts.js';
import { WINDOW_DAYS } from '../../src/domain/scoring/methodology.js';
import { readActivitySources, readSideSources } from '../../src/data/activity-records.repository.js';
import { readPublishedSkillsDigests } from '../../src/data/posts.repository.js';
import { captureStatements, tableScans } from '../support/explain.js';
import { recordSales, seedSellers, sellerId, skillOf, walletOf } from '../support/ledger.js';
import { codeFingerprint } from '../../src/platform/code-fingerprint.js';

const SELLER = '00000000-0000-4000-8000-000000000001';
const QUIET = '00000000-0000-4000-8000-000000000002';
const POST_A = '00000000-0000-4000-8000-0000000000aa';
const POST_B = '00000000-0000-4000-8000-0000000000bb';
const DAY_MS = 86_400_000;

/**
 * Every render of agents' documents uses each agent's recorded activity aggregates, part by part,
 * while its posts (or its purchases) are as recorded and nothing of them has left a window: the
 * facts so computed must be those a fresh read gives, whatever was written since, in whatever order
 * it committed, and at the exact instant a sale leaves the 90-day window.
 */
describe('recorded activity aggregates', function () {
  this.timeout(60_000);
  let opened: OpenTestDatabase;
  let pool: pg.Pool;
  let db: Db;
  // A sale exactly 89 days before `now`, on a whole millisecond: it leaves the window at now + 1 day.
  const now = new Date(Math.floor(Date.now() / 1000) * 1000);
  const oldSale = new Date(now.getTime() - 89 * DAY_MS);
  let sale = 0;

  const addSale = async (at: Date, buyer = `0x${'a'.repeat(40)}`, buyerAgent: string | null = null) => {
    const id = `00000000-0000-4000-8000-${(0x100 + sale++).toString(16).padStart(12, '0')}`;
    await pool.query(
      `INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, created_at, updated_at, settled_at)
       VALUES ($1::uuid, 'purchase', 'settled', 2, 'eip155:84532', '0x${'0'.repeat(39)}a', $2, '0x${'1'.repeat(40)}', 1000000, '0x' || md5($1::text) || md5('n' || $1::text), $3::timestamptz - interval '1 minute', $3::timestamptz + interval '5 minutes',
               'https://market.example/api/posts/x', '${POST_A}', '0x' || md5('tx' || $1::text) || md5('t' || $1::text), '{}', '{}', $3, $3, $3)`,
      [id, buyer, at.toISOString()],
    );
    await pool.query(
      `INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at, skill_digest)
       VALUES ($1::uuid, '${POST_A}', 1, '${SELLER}', $2, $4, 1000000, '0x' || md5('tx' || $1::text) || md5('t' || $1::text), $3, skill_digest('{"files":[]}'))`,
      [id, buyer, at.toISOString(), buyerAgent],
    );
  };

  const agents = () => db.selectFrom('agents').selectAll().orderBy('handle', 'desc').execute();
  /**
   * The facts and skills' digests through the records (recording what they reread), the same read
   * afresh, and how many agents the records did not serve.
   */
  const both = async (at: Date) => {
    const subjects = (await agents()).map((agent) => ({ agent, identity: null }));
    const through = await loadFactsRecorded(db, subjects, at);
    const ids = subjects.map((s) => s.agent.id);
    return {
      reread: through.reread,
      recorded: { facts: through.facts, skills: Object.fromEntries(through.skillsDigests) },
      fresh: {
        facts: await loadFactsMany(db, subjects, at),
        skills: Object.fromEntries(await readPublishedSkillsDigests(db, ids)),
      },
    };
  };
  /** `both`, expecting the records to have served what a fresh read gives, and `reread` agents reread. */
  const same = async (at: Date, reread: number) => {
    const read = await both(at);
    expect(read.recorded).to.deep.equal(read.fresh);
    expect(read.reread).to.equal(reread);
    return read.fresh;
  };

  before(async () => {
    opened = await openTestDatabase(3);
    ({ pool, db } = opened);
    await pool.query(`
      INSERT INTO agents (id, handle, wallet_address) VALUES
        ('${SELLER}', 'recorded-seller', '0x${'1'.repeat(40)}'),
        ('${QUIET}', 'recorded-quiet', '0x${'2'.repeat(40)}');
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name, oasf_skills) VALUES
        ('${POST_A}', '${SELLER}', 'published', 'Tables', 'p', 1000000, now() - interval '3 days', 'tables', '{analytical_skills/coding}'),
        ('${POST_B}', '${SELLER}', 'published', 'Charts', 'p', 2000000, now() - interval '40 days', 'charts', '{}');
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
      SELECT id, 1, '1.0.0', '{"files":[]}', 'x', 0, skill_name, skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}') FROM posts;`);
    await addSale(oldSale);
    await addSale(new Date(now.getTime() - 10 * DAY_MS), `0x${'b'.repeat(40)}`);
  });
  after(() => opened?.close());

  it('records every agent on the first read, then serves them all from the records while nothing changed', async () => {
    const [seller] = (await same(now, 2)).facts;
    expect(seller).to.include({ handle: 'recorded-seller', settlementCount90d: 2, publishedSkillCount: 2 });
    await same(now, 0);
  });

  it('reads a seller again after a purchase written with no event, and only that seller', async () => {
    await same(now, 0);
    await addSale(new Date(now.getTime() - DAY_MS), `0x${'c'.repeat(40)}`);
    const [seller] = (await same(now, 1)).facts;
    expect(seller).to.include({ settlementCount90d: 3, uniqueBuyers90d: 3 });
  });

  /**
   * The statements a read through the records at `at` sends for each part's aggregates (the posts'
   * part: the skills' counts, their OASF categories and the skills' digest; the sales' part), and
   * how many agents it read again; then what it recorded must serve what a fresh read gives.
   */
  const partsRead = async (at = now) => {
    const subjects = (await agents()).map((agent) => ({ agent, identity: null }));
    const { result, statements } = await captureStatements('', () => loadFactsRecorded(db, subjects, at));
    const sent = (marker: string) => statements.filter((s) => s.text.includes(marker)).length;
    await same(at, 0);
    return {
      counts: sent('with_oasf'),
      categories: sent('count(DISTINCT c)'),
      skills: sent('md5(string_agg(x.r'),
      sales: sent('repeat_buyers_90d'),
      // Each side's sources: once for every agent before deciding, again in the snapshot only
      // where that side's part is read again.
      postsSources: sent("hashtextextended(id::text || ':' || change_txid"),
      salesSources: sent('sum(hashtextextended(change_txid::text, 0))'),
      reread: result.reread,
    };
  };
  const POSTS_ONLY = { counts: 1, categories: 1, skills: 1, sales: 0, postsSources: 2, salesSources: 1, reread: 1 };
  const SALES_ONLY = { counts: 0, categories: 0, skills: 0, sales: 1, postsSources: 1, salesSources: 2, reread: 1 };
  const BOTH = { counts: 1, categories: 1, skills: 1, sales: 1, postsSources: 2, salesSources: 2, reread: 1 };

  it("reads again only the part that changed: a sale the seller's purchases, a publication its skills", async () => {
    await same(now, 0);
    await addSale(new Date(now.getTime() - DAY_MS), `0x${'d'.repeat(40)}`);
    expect(await partsRead()).to.deep.equal(SALES_ONLY);
    const POST_E = '00000000-0000-4000-8000-0000000000ee';
    await pool.query(`
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name, oasf_skills)
      VALUES ('${POST_E}', '${SELLER}', 'published', 'Graphs', 'p', 0, now() - interval '1 day', 'graphs', '{natural_language_processing/summarization}');
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
      VALUES ('${POST_E}', 1, '1.0.0', '{"files":[]}', 'x', 0, 'graphs', skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}'))`);
    expect(await partsRead()).to.deep.equal(POSTS_ONLY);
    await pool.query(`UPDATE posts SET oasf_skills = '{}' WHERE id = '${POST_B}'`);
    expect(await partsRead()).to.deep.equal(POSTS_ONLY);
    await pool.query(`DELETE FROM posts WHERE id = '${POST_E}'`);
    await pool.query(`DELETE FROM purchases WHERE buyer_address = '0x${'d'.repeat(40)}'`);
    await pool.query(`DELETE FROM payments WHERE payer = '0x${'d'.repeat(40)}'`);
    expect(await partsRead()).to.deep.equal(BOTH);
  });

  it('does not serve a part kept by a later render for an instant before that render', async () => {
    const later = new Date(now.getTime() + 3_600_000);
    await same(now, 0);
    await addSale(new Date(now.getTime() - DAY_MS), `0x${'e'.repeat(40)}`);
    // Recorded for `later`: the posts' part read for `now`, kept; the sales' part read afresh.
    expect(await partsRead(later)).to.deep.equal(SALES_ONLY);
    // The seller's record, written for `later`, is read again whole; the other agent's, written for `now`, serves.
    expect(await partsRead(new Date(now.getTime() + 1_800_000))).to.deep.equal(BOTH);
    await pool.query(`DELETE FROM purchases WHERE buyer_address = '0x${'e'.repeat(40)}'`);
    await pool.query(`DELETE FROM payments WHERE payer = '0x${'e'.repeat(40)}'`);
    expect(await partsRead()).to.deep.equal(BOTH);
  });

  it('reads both parts again from a record without the instants each part holds until', async () => {
    await same(now, 0);
    await pool.query(`UPDATE agent_activity_records SET aggregates = aggregates - 'postsValidUntil'`);
    expect(await partsRead()).to.deep.equal({ ...BOTH, reread: 2 });
  });

  it("reads a seller again after its own purchase, and after a purchase's row is written again", async () => {
    await addSale(new Date(now.getTime() - DAY_MS), `0x${'1'.repeat(40)}`, SELLER);
    const [own] = (await same(now, 1)).facts;
    expect(own).to.include({ settlementCount90d: 3 });
    await pool.query(`UPDATE purchases SET amount_atomic = 5000000 WHERE buyer_address = '0x${'c'.repeat(40)}'`);
    const [rewritten] = (await same(now, 1)).facts;
    expect(rewritten!.revenueAtomic90d).to.equal(7_000_000n);
  });

  it('reads an author again after an edit that committed after a later transaction had been recorded', async () => {
    await same(now, 0);
    // An older transaction holds its id; a younger one edits a post and commits; the records are
    // taken; then the older one edits the other post and commits with the smaller id.
    const older = await pool.connect();
    try {
      await older.query('BEGIN');
      await older.query('SELECT pg_current_xact_id()');
      await pool.query(`UPDATE posts SET title = 'Tables, sorted' WHERE id = '${POST_A}'`);
      await same(now, 1);
      await older.query(`UPDATE posts SET price_atomic = 0 WHERE id = '${POST_B}'`);
      await older.query('COMMIT');
    } finally {
      older.release();
    }
    const [seller] = (await same(now, 1)).facts;
    expect(seller).to.include({ paywalledSkillCount: 1 });
  });

  it("reads an author again after a version of its is signed (its skills' digest changes, its post's row does not)", async () => {
    const before = await both(now);
    await pool.query(
      `UPDATE post_versions SET signer = '0x${'1'.repeat(40)}', signature = '0x${'ab'.repeat(65)}', signed_at = now() WHERE post_id = '${POST_B}'`,
    );
    const after = await same(now, 1);
    expect(after.skills[SELLER]).to.not.equal(before.fresh.skills[SELLER]);
  });

  it('reads an author again after a post is deleted', async () => {
    await pool.query(`
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, skill_name)
      VALUES ('00000000-0000-4000-8000-0000000000cc', '${QUIET}', 'draft', 'Draft', 'p', 0, 'draft')`);
    await pool.query(`
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
      VALUES ('00000000-0000-4000-8000-0000000000cc', 1, '1.0.0', '{"files":[]}', 'x', 0, 'draft', skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}'))`);
    await same(now, 1);
    await pool.query(`DELETE FROM posts WHERE id = '00000000-0000-4000-8000-0000000000cc'`);
    await same(now, 1);
  });

  it('serves the record until the millisecond a sale leaves the 90-day window, and reads afresh from then', async () => {
    const leaves = new Date(oldSale.getTime() + WINDOW_DAYS.long * DAY_MS);
    await same(now, 0);
    const [before] = (await same(new Date(leaves.getTime() - 1), 0)).facts;
    const [after] = (await same(leaves, 1)).facts;
    expect(after!.settlementCount90d).to.equal(before!.settlementCount90d - 1);
  });

  it('serves the record until the millisecond a skill leaves the 30-day window, and reads afresh from then', async () => {
    // Published 29.5 days before `now`, on a whole millisecond: it leaves the window before the old sale does.
    const published = new Date(now.getTime() - 29.5 * DAY_MS);
    await pool.query(
      `INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name)
       VALUES ('00000000-0000-4000-8000-0000000000dd', '${QUIET}', 'published', 'Maps', 'p', 0, $1, 'maps')`,
      [published.toISOString()],
    );
    await pool.query(`
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
      VALUES ('00000000-0000-4000-8000-0000000000dd', 1, '1.0.0', '{"files":[]}', 'x', 0, 'maps', skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}'))`);
    const leaves = new Date(published.getTime() + WINDOW_DAYS.short * DAY_MS);
    // The author of the new skill, and the seller recorded at the later instant of the test before.
    await same(now, 2);
    const [, before] = (await same(new Date(leaves.getTime() - 1), 0)).facts;
    const [, after] = (await same(leaves, 1)).facts;
    expect(before).to.include({ handle: 'recorded-quiet', postsPublished30d: 1 });
    expect(after).to.include({ postsPublished30d: 0 });
  });

  it('names the code that read a record, so a record read by other code is read afresh', async () => {
    // Recorded at `now` (the test before recorded at later instants).
    await both(now);
    await same(now, 0);
    const { rows } = await pool.query<{ sources: string }>('SELECT sources FROM agent_activity_records');
    expect(rows).to.have.length(2);
    for (const r of rows) expect(r.sources.startsWith(`${codeFingerprint()}:`)).to.equal(true);
    await pool.query(`UPDATE agent_activity_records SET sources = 'other code' || substr(sources, 65)`);
    await same(now, 2);
  });

  it('reads afresh when asked for an instant before the record was taken', async () => {
    const later = new Date(now.getTime() + 2 * DAY_MS);
    await pool.query('DELETE FROM agent_activity_records');
    await same(later, 2);
    await same(now, 2);
  });
});

describe('the sources of recorded activity', function () {
  this.timeout(60_000);
  let opened: OpenTestDatabase;
  let pool: pg.Pool;
  let db: Db;

  before(async () => {
    opened = await openTestDatabase();
    ({ pool, db } = opened);
    // 200 authors of 20 posts and 50 sales each.
    await seedSellers(pool, 200);
    await pool.query(
      `INSERT INTO posts (author_id, status, title, preview, price_atomic, published_at, skill_name)
       SELECT id, 'published', 'Skill ' || k, 'p', 1000, now() - k * interval '1 day', 'more-' || k
       FROM agents, generate_series(2, 20) k`,
    );
    const day = Date.now();
    await recordSales(
      pool,
      Array.from({ length: 200 * 50 }, (_, n) => {
        const seller = Math.floor(n / 50) + 1;
        return {
          postId: skillOf(seller),
          sellerId: sellerId(seller),
          buyer: walletOf(0x1000 + (n % 50)),
          at: new Date(day - ((n % 50) + 1) * DAY_MS),
        };
      }),
    );
    await pool.query('VACUUM (ANALYZE) posts, purchases');
  });
  after(() => opened?.close());

  it("reads a page's posts and purchases from their indexes alone", async () => {
    const ids = Array.from({ length: 100 }, (_, i) => sellerId(i + 1));
    const now = new Date();
    const since = { short: new Date(now.getTime() - 30 * DAY_MS), long: new Date(now.getTime() - 90 * DAY_MS) };
    const { statements } = await captureStatements('hashtextextended', () => readActivitySources(db, ids, since));
    expect(statements).to.have.length(1);
    const posts = await tableScans(pool, statements[0]!, 'posts');
    const purchases = await tableScans(pool, statements[0]!, 'purchases');
    expect(posts.map((s) => [s.type, s.index, s.rows, s.heapFetches])).to.deep.equal([
      ['Index Only Scan', 'posts_author_activity_idx', 2000, 0],
    ]);
    expect(purchases.map((s) => [s.type, s.index, s.rows, s.heapFetches])).to.deep.equal([
      ['Index Only Scan', 'purchases_seller_activity_idx', 5000, 0],
    ]); // A side read again alone is the same read of its index.
    for (const [side, table, index, rows] of [
      ['posts', 'posts', 'posts_author_activity_idx', 2000],
      ['sales', 'purchases', 'purchases_seller_activity_idx', 5000],
    ] as const) {
      const one = await captureStatements('hashtextextended', () => readSideSources(db, side, ids, since));
      expect(one.statements).to.have.length(1);
      const scans = await tableScans(pool, one.statements[0]!, table);
      expect(scans.map((s) => [s.type, s.index, s.rows, s.heapFetches])).to.deep.equal([
        ['Index Only Scan', index, rows, 0],
      ]);
    }
  });
});
