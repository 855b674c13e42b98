import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/data/db.js';
import {
  findPaidListings,
  findSellerProofs,
  readListedSourcesPage,
  readListingSources,
  readListingsOfChangedSellers,
} from '../../src/data/discovery.repository.js';
import {
  countPublishedSkills,
  readMostBoughtSkillIds,
  readPublishedSkills,
  shardsWithPublishedSkills,
} from '../../src/data/posts.repository.js';
import type { DB } from '../../src/data/schema.js';
import { batchEnd, indexFeed, NIL_ID, readChangeBatch, readCursor } from '../../src/data/projections.repository.js';
import { indexBazaarListings, type BazaarContext } from '../../src/domain/projections/bazaar-listings.js';
import {
  SKILLS_INDEX_INLINE,
  skillsIndex,
  skillsIndexShard,
  unpublishedShards,
} from '../../src/domain/projections/skills-index.js';
import { skillsIndexDocument, skillsIndexShardDocument } from '../../src/documents/skills/skills-index.document.js';
import { SKILLS_INDEX_SHARDS } from '../../src/documents/skills/skills-index.renderer.js';
import { documentErrors } from '../../src/documents/validate.js';
import { MarketApi } from '../../src/cli/market-api.js';
import { createLogger } from '../../src/platform/logger.js';
import type { ObjectStore } from '../../src/platform/object-store.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const ROOT = join(import.meta.dirname, '../..');

const CTX: BazaarContext = {
  site: {
    baseUrl: 'https://market.example',
    apiVersion: '1.0.0',
    network: 'eip155:84532',
    usdcAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    registrationPriceAtomic: 1_000_000n,
  },
  chain: {
    chainId: 84532,
    usdc: { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2', decimals: 6 },
    treasury: '0x00000000000000000000000000000000000000aa',
  },
};

describe('projections read their changes in bounded batches (a generated marketplace)', function () {
  this.timeout(120_000);
  let tdb: TestDatabase;
  let database: Database;
  let pool: pg.Pool;

  /** Runs Bazaar passes of `limit` until none is left; returns each pass's listings changed. */
  const bazaarUntilDone = async (limit: number) => {
    const passes: number[] = [];
    for (let more = true; more; ) {
      const pass = await indexBazaarListings(database.db, CTX, limit);
      if (!pass) throw new Error('the lock is free in this test');
      passes.push(pass.changed);
      more = pass.more;
      if (passes.length > 1_000) throw new Error('the passes never end');
    }
    return passes;
  };
  const listed = async () =>
    (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM bazaar_listings')).rows[0]?.n ?? -1;
  const listable = async () =>
    (
      await pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM posts WHERE status = 'published' AND price_atomic > 0",
      )
    ).rows[0]?.n ?? -1;

  before(async () => {
    tdb = await freshDatabase();
    await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'bench/generate.ts'),
        '--agents',
        '60',
        '--posts',
        '400',
        '--purchases',
        '1500',
        '--database-url',
        tdb.url,
      ],
      { cwd: ROOT },
    );
    database = await openDatabase({
      url: tdb.url,
      poolMax: 4,
      embeddedDataDir: 'memory://',
      log: createLogger('silent'),
    });
    pool = new pg.Pool({ connectionString: tdb.url, max: 2 });
  });
  after(async () => {
    await pool?.end();
    await database?.close();
    await tdb?.drop();
  });

  it('a cursor stops after the last row of a full batch, and at the horizon once a batch is not full', () => {
    const from = { txid: '100', id: NIL_ID };
    const last = { change_txid: '120', id: '7b0e5c9e-0000-4000-8000-000000000000' };
    expect(batchEnd(from, '200', { taken: 50, last }, 50)).to.deep.equal({
      reached: { txid: '120', id: last.id },
      more: true,
    });
    expect(batchEnd(from, '200', { taken: 3, last }, 50)).to.deep.equal({
      reached: { txid: '200', id: NIL_ID },
      more: false,
    });
    // A horizon seen lower than the cursor (a transaction of another database back in view) never moves it back.
    const ahead = { txid: '300', id: NIL_ID };
    expect(batchEnd(ahead, '200', { taken: 0, last: undefined }, 50).reached).to.deep.equal(ahead);
  });

  it('the feed of 400 skills is indexed in batches of 150, every skill once, each at its own time', async () => {
    const written: number[] = [];
    for (let more = true; more; ) {
      const pass = await indexFeed(database.db, 'post', 150);
      if (!pass) throw new Error('the lock is free in this test');
      written.push(pass.written);
      more = pass.more;
    }
    expect(written.slice(0, 2)).to.deep.equal([150, 150]);
    expect(Math.max(...written)).to.be.at.most(150);
    const { rows } = await pool.query<{ n: number; times: number; posts: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT feed_at)::int AS times, (SELECT count(*)::int FROM posts) AS posts
       FROM feed_entries WHERE kind = 'post'`,
    );
    expect(rows[0]).to.deep.include({ n: rows[0]?.posts, times: rows[0]?.posts });
    expect((await readCursor(database.db, 'post')).id).to.equal(NIL_ID);
  });

  it('the first Bazaar pass rebuilds every listing in pages of 40, then drops nothing it should keep', async () => {
    const passes = await bazaarUntilDone(40);
    const expected = await listable();
    expect(expected).to.be.greaterThan(100);
    expect(passes.length).to.be.at.least(Math.ceil(expected / 40));
    expect(Math.max(...passes)).to.be.at.most(40 * 3);
    expect(await listed()).to.equal(expected);
  });

  it('a skill unpublished, and a price set to 0, drop their listings on the next passes', async () => {
    const { rows } = await pool.query<{ id: string }>(
      "SELECT id FROM posts WHERE status = 'published' AND price_atomic > 0 ORDER BY id LIMIT 2",
    );
    const [a, b] = rows.map((r) => r.id);
    await pool.query("UPDATE posts SET status = 'unpublished' WHERE id = $1", [a]);
    await pool.query('UPDATE posts SET price_atomic = 0 WHERE id = $1', [b]);
    await bazaarUntilDone(40);
    const left = await pool.query('SELECT post_id FROM bazaar_listings WHERE post_id = ANY($1::uuid[])', [[a, b]]);
    expect(left.rows).to.deep.equal([]);
    expect(await listed()).to.equal(await listable());
  });

  it("a sale changes its skill's buyers and re-renders none of the seller's other listings", async () => {
    const { rows } = await pool.query<{ post_id: string; seller_id: string; buyers: number }>(
      `SELECT l.post_id, l.seller_id, l.buyers FROM bazaar_listings l
       WHERE (SELECT count(*) FROM bazaar_listings o WHERE o.seller_id = l.seller_id) > 3
       ORDER BY l.post_id LIMIT 1`,
    );
    const sold = rows[0];
    if (!sold) throw new Error('the generated marketplace has a seller with several listings');
    // What a sale writes: a purchase, and the seller's metrics (which mark the seller changed).
    await pool.query(
      `WITH pay AS (
         INSERT INTO payments (purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce,
                               valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, settled_at)
         SELECT 'purchase', 'settled', 2, 'eip155:84532', '0x' || repeat('0', 39) || 'a', '0x' || repeat('b', 40),
                '0x' || repeat('c', 40), p.price_atomic, '0x' || repeat('d', 64), now() - interval '1 minute',
                now() + interval '5 minutes', 'https://market.example/x', p.id, '0x' || repeat('e', 64), '{}', '{}', now()
         FROM posts p WHERE p.id = $1 RETURNING id, post_id, amount_atomic)
       INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, amount_atomic, tx_hash, skill_digest)
       SELECT pay.id, pay.post_id, 1, $2, '0x' || repeat('b', 40), pay.amount_atomic, '0x' || repeat('e', 64), v.skill_digest
       FROM pay JOIN post_versions v ON v.post_id = pay.post_id AND v.version = 1`,
      [sold.post_id, sold.seller_id],
    );
    await pool.query(
      `INSERT INTO agent_metrics (agent_id, unique_buyers_90d) VALUES ($1, 999)
       ON CONFLICT (agent_id) DO UPDATE SET unique_buyers_90d = agent_metrics.unique_buyers_90d + 1`,
      [sold.seller_id],
    );
    expect(await readListingsOfChangedSellers(database.db, [sold.seller_id], 100)).to.deep.equal([]);
    const before = await pool.query<{ post_id: string; xmin: string }>(
      'SELECT post_id, xmin::text FROM bazaar_listings WHERE seller_id = $1 ORDER BY post_id',
      [sold.seller_id],
    );
    await bazaarUntilDone(40);
    const after = await pool.query<{ post_id: string; xmin: string; buyers: number }>(
      'SELECT post_id, xmin::text, buyers FROM bazaar_listings WHERE seller_id = $1 ORDER BY post_id',
      [sold.seller_id],
    );
    const rewritten = after.rows.filter((r, i) => r.xmin !== before.rows[i]?.xmin).map((r) => r.post_id);
    expect(rewritten).to.deep.equal([sold.post_id]);
    expect(after.rows.find((r) => r.post_id === sold.post_id)?.buyers).to.equal(sold.buyers + 1);
  });

  it("a seller's new handle reaches every listing of the seller, in batches", async () => {
    const { rows } = await pool.query<{ seller_id: string; n: number }>(
      'SELECT seller_id, count(*)::int AS n FROM bazaar_listings GROUP BY seller_id ORDER BY count(*) DESC LIMIT 1',
    );
    const seller = rows[0];
    if (!seller) throw new Error('there are listings');
    expect(seller.n).to.be.greaterThan(5);
    await pool.query("UPDATE agents SET handle = 'renamed-seller' WHERE id = $1", [seller.seller_id]);
    const passes = await bazaarUntilDone(5);
    expect(passes.length).to.be.greaterThan(1);
    const stale = await pool.query(
      "SELECT post_id FROM bazaar_listings WHERE seller_id = $1 AND NOT item::text LIKE '%@renamed-seller%'",
      [seller.seller_id],
    );
    expect(stale.rows).to.deep.equal([]);
  });

  describe('the skills index: the most bought inline, every skill in the shard of its id', () => {
    const ctx = { site: CTX.site, chain: CTX.chain };
    // The index names each inline skill's archive, built and put on first render: a bucket that keeps nothing.
    const archives = { store: { put: async () => ({ etag: '' }) } as unknown as ObjectStore };

    it(`lists ${SKILLS_INDEX_INLINE} skills inline, the most bought first, counts them all and links 256 shards`, async () => {
      const doc = await skillsIndex(database.db, ctx, archives);
      const published = (
        await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM posts WHERE status = 'published'")
      ).rows[0]?.n;
      expect(published).to.be.greaterThan(SKILLS_INDEX_INLINE);
      expect(doc.total).to.equal(published);
      expect(doc.skills).to.have.length(SKILLS_INDEX_INLINE);
      expect(doc.shards).to.have.length(256);
      expect(documentErrors(skillsIndexDocument, doc)).to.deep.equal([]);
      const { rows } = await pool.query<{ id: string; buyers: number }>(
        "SELECT p.id, coalesce(l.buyers, 0) AS buyers FROM posts p LEFT JOIN bazaar_listings l ON l.post_id = p.id WHERE p.status = 'published'",
      );
      const buyers = new Map(rows.map((r) => [r.id, r.buyers]));
      const inline = doc.skills.map((s) => buyers.get(s.id) ?? -1);
      expect(inline).to.deep.equal([...inline].sort((a, b) => b - a));
      expect(Math.min(...inline)).to.be.at.least(
        Math.max(...rows.filter((r) => !doc.skills.some((s) => s.id === r.id)).map((r) => r.buyers)),
      );
    });

    it('the shards together list every published skill once, each in the shard of its first two hex digits', async () => {
      const seen: string[] = [];
      for (const shard of SKILLS_INDEX_SHARDS) {
        const doc = await skillsIndexShard(database.db, ctx, shard);
        expect(documentErrors(skillsIndexShardDocument, doc), shard).to.deep.equal([]);
        for (const skill of doc.skills) expect(skill.id.slice(0, 2), skill.id).to.equal(shard);
        seen.push(...doc.skills.map((s) => s.id));
      }
      const { rows } = await pool.query<{ id: string }>("SELECT id FROM posts WHERE status = 'published' ORDER BY id");
      expect([...seen].sort()).to.deep.equal(rows.map((r) => r.id));
    });

    it('the shards that list skills and were never published are the ones the index job queues', async () => {
      const { rows } = await pool.query<{ shard: string }>(
        "SELECT DISTINCT left(id::text, 2) AS shard FROM posts WHERE status = 'published' ORDER BY 1",
      );
      const listing = rows.map((r) => r.shard);
      expect((await unpublishedShards(database.db)).sort()).to.deep.equal(listing);
      const [first] = listing;
      await pool.query(
        `INSERT INTO published_documents (key, content_type, sha256, bytes) VALUES ($1, 'application/json', 'x', 1)`,
        [`.well-known/agent-skills/shards/${first}.json`],
      );
      expect(await unpublishedShards(database.db)).to.not.include(first);
    });

    it('the installer finds a skill the index does not list inline in its shard, by id and by seller/name', async () => {
      const index = await skillsIndex(database.db, ctx, archives);
      const { rows } = await pool.query<{ id: string; handle: string; skill_name: string }>(
        `SELECT p.id, a.handle, p.skill_name FROM posts p JOIN agents a ON a.id = p.author_id
         WHERE p.status = 'published' AND NOT p.id = ANY($1::uuid[]) ORDER BY p.id LIMIT 1`,
        [index.skills.map((s) => s.id)],
      );
      const hidden = rows[0];
      if (!hidden) throw new Error('some skill is not inline');
      // A market that answers the index and its shards as this service renders them, and search by name.
      const requested: string[] = [];
      const fetchOf = async (input: string | URL | Request) => {
        const path = new URL(String(input)).pathname;
        requested.push(path);
        const shard = /^\/\.well-known\/agent-skills\/shards\/([0-9a-f]{2})\.json$/.exec(path)?.[1];
        const body =
          path === '/.well-known/agent-skills/index.json'
            ? index
            : shard
              ? await skillsIndexShard(database.db, ctx, shard)
              : path === '/api/discovery/search'
                ? { results: [{ type: 'post', id: hidden.id, title: 'x', url: 'https://market.example/x' }] }
                : undefined;
        return body ? Response.json(body) : new Response('{}', { status: 404 });
      };
      const market = new MarketApi('https://market.example', fetchOf as typeof fetch);
      expect((await market.entryOf(hidden.id))?.name).to.equal(hidden.skill_name);
      expect(requested).to.include(`/.well-known/agent-skills/shards/${hidden.id.slice(0, 2)}.json`);
      expect((await market.resolve(`${hidden.handle}/${hidden.skill_name}`)).postId).to.equal(hidden.id);
      // Another seller's skill of the same name listed inline does not hide this one: the name alone is ambiguous.
      const [inline] = index.skills;
      if (!inline) throw new Error('the index lists skills inline');
      index.skills[0] = { ...inline, name: hidden.skill_name, seller: { ...inline.seller, handle: 'another-seller' } };
      const again = new MarketApi('https://market.example', fetchOf as typeof fetch);
      await again.resolve(hidden.skill_name).then(
        () => expect.fail('a name two sellers publish is ambiguous'),
        (err: { code?: string }) => expect(err.code).to.equal('ambiguous_name'),
      );
    });
  });

  it('every statement of the projections and the discovery documents reads an index, never a whole table', async () => {
    // The statements as the code sends them, captured, then planned with sequential scans
    // discouraged: a plan that still scans a table whole has no index to read (at a million rows,
    // a statement timeout).
    const statements: CompiledQuery[] = [];
    const logged = new Kysely<DB>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: tdb.url, max: 1 }) }),
      log: (e) => {
        if (e.level === 'query') statements.push(e.query);
      },
    });
    const someIds = (await pool.query<{ id: string }>('SELECT id FROM posts ORDER BY id LIMIT 3')).rows.map(
      (r) => r.id,
    );
    const sellers = (await pool.query<{ id: string }>('SELECT id FROM agents ORDER BY id LIMIT 3')).rows.map(
      (r) => r.id,
    );
    const from = { txid: '1', id: NIL_ID };
    await logged.transaction().execute(async (trx) => {
      for (const table of ['posts', 'purchases', 'agents'] as const)
        await readChangeBatch(trx, table, from, '999999999', 50);
      await readListingSources(trx, someIds);
      await readListedSourcesPage(trx, NIL_ID, 50);
      await readListingsOfChangedSellers(trx, sellers, 50);
    });
    await readMostBoughtSkillIds(logged, 100);
    await readPublishedSkills(logged, { order: 'first-published', ids: { shard: '5f' } });
    await shardsWithPublishedSkills(logged, ['00', '5f', 'ff']);
    await readPublishedSkills(logged, { order: 'newest', limit: 200 });
    await countPublishedSkills(logged);
    await findPaidListings(logged, 'https://market.example', 1_000);
    await findSellerProofs(logged, 'https://market.example', 1_000);
    await indexFeed(logged, 'post', 50);
    await indexFeed(logged, 'agent', 50);
    await logged.destroy();

    const LARGE = new Set([
      'posts',
      'post_versions',
      'purchases',
      'agents',
      'payments',
      'bazaar_listings',
      'feed_entries',
    ]);
    const scans = (node: Record<string, unknown>): string[] => [
      ...(node['Node Type'] === 'Seq Scan' && LARGE.has(String(node['Relation Name']))
        ? [String(node['Relation Name'])]
        : []),
      ...((node.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(scans),
    ];
    const whole: string[] = [];
    const client = await pool.connect();
    try {
      for (const q of statements.filter(
        (q) => /^\s*(select|with|insert|update)/i.test(q.sql) && !/pg_try_advisory/i.test(q.sql),
      )) {
        await client.query('BEGIN');
        await client.query('SET LOCAL enable_seqscan = off');
        const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${q.sql}`, q.parameters as unknown[]);
        await client.query('ROLLBACK');
        const plan = (rows[0] as { 'QUERY PLAN': { Plan: Record<string, unknown> }[] })['QUERY PLAN'][0]?.Plan ?? {};
        for (const table of scans(plan)) whole.push(`${table}: ${q.sql.replace(/\s+/g, ' ').slice(0, 160)}`);
      }
    } finally {
      client.release();
    }
    expect(statements.length).to.be.greaterThan(12);
    expect(whole).to.deep.equal([]);
  });
});
