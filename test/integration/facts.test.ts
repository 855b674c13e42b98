import { expect } from 'chai';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DB } from '../../src/data/schema.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { loadFactsMany } from '../../src/domain/scoring/load-facts.js';

/**
 * The sales facts of the score, read for a page of sellers in one statement: 90-day revenue,
 * settlements, distinct buyers, agent buyers and repeat buyers, and the last settlement ever.
 */
describe('sales facts of a page of sellers', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let pool: pg.Pool;
  let db: Kysely<DB>;
  const now = new Date();
  const daysAgo = (d: number) => new Date(now.getTime() - d * 86_400_000).toISOString();

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('error', () => undefined); // idle clients of a database being dropped
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    await pool.query(`
      INSERT INTO agents (id, handle, wallet_address) VALUES
        ('00000000-0000-4000-8000-000000000001', 'facts-seller', '0x${'1'.repeat(40)}'),
        ('00000000-0000-4000-8000-000000000002', 'facts-quiet', '0x${'2'.repeat(40)}'),
        ('00000000-0000-4000-8000-000000000003', 'facts-buyer', '0x${'3'.repeat(40)}');
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name)
        VALUES ('00000000-0000-4000-8000-0000000000aa', '00000000-0000-4000-8000-000000000001', 'published', 'Tables', 'p', 1000000, now(), 'tables');
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
        VALUES ('00000000-0000-4000-8000-0000000000aa', 1, '1.0.0', '{"files":[]}', 'x', 0, 'tables',
                skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}'));`);
    // Buyer A twice in the window (a repeat buyer), the buyer agent once, buyer C only 100 days ago.
    const sales: Array<[string, string | null, number, string]> = [
      [`0x${'a'.repeat(40)}`, null, 1_000_000, daysAgo(2)],
      [`0x${'a'.repeat(40)}`, null, 1_500_000, daysAgo(40)],
      [`0x${'3'.repeat(40)}`, '00000000-0000-4000-8000-000000000003', 2_000_000, daysAgo(10)],
      [`0x${'c'.repeat(40)}`, null, 9_000_000, daysAgo(100)],
    ];
    for (const [n, [buyer, agent, amount, at]] of sales.entries()) {
      const id = `00000000-0000-4000-8000-00000000010${n}`;
      await pool.query(
        `INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, created_at, updated_at, settled_at)
         VALUES ($1::uuid, 'purchase', 'settled', 2, 'eip155:84532', '0x${'0'.repeat(39)}a', $2, '0x${'1'.repeat(40)}', $3, '0x' || md5($1::text) || md5('n' || $1::text), $4::timestamptz - interval '1 minute', $4::timestamptz + interval '5 minutes',
                 'https://market.example/api/posts/x', '00000000-0000-4000-8000-0000000000aa', '0x' || md5('tx' || $1::text) || md5('t' || $1::text), '{}', '{}', $4, $4, $4)`,
        [id, buyer, amount, at],
      );
      await pool.query(
        `INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at, skill_digest)
         VALUES ($1::uuid, '00000000-0000-4000-8000-0000000000aa', 1, '00000000-0000-4000-8000-000000000001', $2, $3, $4, '0x' || md5('tx' || $1::text) || md5('t' || $1::text), $5,
                 skill_digest('{"files":[]}'))`,
        [id, buyer, agent, amount, at],
      );
    }
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it("counts the window's revenue, settlements, distinct, agent and repeat buyers, and the last settlement ever", async () => {
    const agents = await db
      .selectFrom('agents')
      .selectAll()
      .where('handle', 'in', ['facts-seller', 'facts-quiet'])
      .orderBy('handle', 'desc')
      .execute();
    const [seller, quiet] = await loadFactsMany(
      db,
      agents.map((agent) => ({ agent, identity: null })),
      now,
    );
    expect(seller).to.include({
      handle: 'facts-seller',
      settlementCount90d: 3,
      uniqueBuyers90d: 2,
      agentBuyers90d: 1,
      repeatBuyers90d: 1,
      publishedSkillCount: 1,
      paywalledSkillCount: 1,
    });
    expect(seller!.revenueAtomic90d).to.equal(4_500_000n);
    expect(seller!.lastSettleAt?.toISOString()).to.equal(daysAgo(2));
    expect(quiet).to.include({
      handle: 'facts-quiet',
      settlementCount90d: 0,
      uniqueBuyers90d: 0,
      agentBuyers90d: 0,
      repeatBuyers90d: 0,
      lastSettleAt: null,
    });
    expect(quiet!.revenueAtomic90d).to.equal(0n);
  });

  it('counts how many agents list each agent among their similar ones, through the index whatever the statistics say', async () => {
    const seller = '00000000-0000-4000-8000-000000000001';
    const quiet = '00000000-0000-4000-8000-000000000002';
    const buyer = '00000000-0000-4000-8000-000000000003';
    // The seller is in the quiet agent's and the buyer's lists; the quiet agent in the buyer's; nobody lists the buyer.
    await pool.query(`
      INSERT INTO agent_similar (agent_id, similar_id, rank, similarity, method) VALUES
        ('${quiet}', '${seller}', 1, 0.5, 'idf-jaccard'), ('${buyer}', '${seller}', 1, 0.4, 'idf-jaccard'), ('${buyer}', '${quiet}', 2, 0.3, 'idf-jaccard')`);
    const agents = await db.selectFrom('agents').selectAll().orderBy('handle').execute();
    const facts = await loadFactsMany(
      db,
      agents.map((agent) => ({ agent, identity: null })),
      now,
    );
    expect(facts.map((f) => [f.handle, f.incomingSimilarCount])).to.deep.equal([
      ['facts-buyer', 0],
      ['facts-quiet', 1],
      ['facts-seller', 2],
    ]);
    // Statistics taken while the table was nearly empty, then 10,000 rows: the count must still go
    // through the similar_id index (a plan scanning the table cost 70 ms a page at 100k agents).
    await pool.query('ANALYZE agent_similar');
    await pool.query(`
      INSERT INTO agents (id, handle, wallet_address)
      SELECT ('00000000-0000-4000-9000-' || lpad(to_hex(i), 12, '0'))::uuid, 'facts-bulk-' || i, '0x' || lpad(to_hex(i), 40, '0') FROM generate_series(1, 1000) i;
      INSERT INTO agent_similar (agent_id, similar_id, rank, similarity, method)
      SELECT ('00000000-0000-4000-9000-' || lpad(to_hex(i), 12, '0'))::uuid, ('00000000-0000-4000-9000-' || lpad(to_hex((i + r) % 1000 + 1), 12, '0'))::uuid, r, 0.1, 'idf-jaccard'
      FROM generate_series(1, 1000) i, generate_series(1, 10) r`);
    // The statement loadFactsMany sends, explained.
    const sent: Array<{ text: string; values: unknown[] }> = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, text: unknown, values?: unknown, ...rest: unknown[]) {
      if (typeof text === 'string' && text.includes('agent_similar')) sent.push({ text, values: values as unknown[] });
      return (query as (...args: unknown[]) => unknown).call(this, text, values, ...rest);
    } as typeof query;
    try {
      await loadFactsMany(
        db,
        agents.map((agent) => ({ agent, identity: null })),
        now,
      );
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(sent).to.have.length(1);
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sent[0]!.text}`, sent[0]!.values);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).to.match(/agent_similar_incoming_idx/);
    expect(plan).to.not.match(/Seq Scan on agent_similar/);
  });
});
