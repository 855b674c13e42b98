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
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at)
        VALUES ('00000000-0000-4000-8000-0000000000aa', '00000000-0000-4000-8000-000000000001', 'published', 'Tables', 'p', 1000000, now());
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes)
        VALUES ('00000000-0000-4000-8000-0000000000aa', 1, '1.0.0', '{"files":[]}', 'x', 0);`);
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
        `INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at)
         VALUES ($1::uuid, '00000000-0000-4000-8000-0000000000aa', 1, '00000000-0000-4000-8000-000000000001', $2, $3, $4, '0x' || md5('tx' || $1::text) || md5('t' || $1::text), $5)`,
        [id, buyer, agent, amount, at],
      );
    }
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('counts the window\'s revenue, settlements, distinct, agent and repeat buyers, and the last settlement ever', async () => {
    const agents = await db.selectFrom('agents').selectAll().where('handle', 'in', ['facts-seller', 'facts-quiet']).orderBy('handle', 'desc').execute();
    const [seller, quiet] = await loadFactsMany(db, agents.map((agent) => ({ agent, identity: null })), now);
    expect(seller).to.include({ handle: 'facts-seller', settlementCount90d: 3, uniqueBuyers90d: 2, agentBuyers90d: 1, repeatBuyers90d: 1, publishedSkillCount: 1, paywalledSkillCount: 1 });
    expect(seller!.revenueAtomic90d).to.equal(4_500_000n);
    expect(seller!.lastSettleAt?.toISOString()).to.equal(daysAgo(2));
    expect(quiet).to.include({ handle: 'facts-quiet', settlementCount90d: 0, uniqueBuyers90d: 0, agentBuyers90d: 0, repeatBuyers90d: 0, lastSettleAt: null });
    expect(quiet!.revenueAtomic90d).to.equal(0n);
  });
});
