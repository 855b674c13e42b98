import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { openDatabase } from '../../src/data/db.js';
import { migrate } from '../../src/data/migrate.js';
import { createLogger } from '../../src/platform/logger.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/service.js';

const log = createLogger('silent');

const payment = (overrides: Record<string, unknown> = {}) => ({
  purpose: 'purchase',
  status: 'verified',
  protocol_version: 2,
  network: 'eip155:84532',
  asset: `0x${'a'.repeat(40)}`,
  payer: `0x${'b'.repeat(40)}`,
  pay_to: `0x${'c'.repeat(40)}`,
  amount_atomic: '1000000',
  nonce: `0x${'1'.repeat(64)}`,
  valid_after: new Date(0),
  valid_before: new Date(Date.now() + 60_000),
  resource: 'https://market.example/api/posts/x?view=full',
  payload: {},
  requirements: {},
  ...overrides,
});

describe('migrations and the data model', function () {
  this.timeout(60_000);

  describe('on embedded PGlite', () => {
    it('apply once, then find nothing left to apply', async () => {
      const db = await openDatabase({ poolMax: 1, embeddedDataDir: 'memory://', log });
      try {
        const first = await migrate(db.pool);
        expect(first).to.include('0001_init.sql');
        expect(await migrate(db.pool)).to.deep.equal([]);
        const { rows } = await db.pool.query("SELECT similarity('agent', 'agnet') > 0 AS trgm");
        expect(rows[0].trgm).to.equal(true);
      } finally {
        await db.close();
      }
    });
  });

  describe('on PostgreSQL', () => {
    let tdb: TestDatabase;
    let pool: pg.Pool;
    before(async () => {
      tdb = await freshDatabase();
      pool = new pg.Pool({ connectionString: tdb.url, max: 4 });
    });
    after(async () => {
      await pool?.end();
      await tdb?.drop();
    });

    it('the same migrations are already applied in a template clone, and concurrent migrators do not race', async () => {
      const results = await Promise.all([migrate(pool), migrate(pool), migrate(pool)]);
      expect(results.flat()).to.deep.equal([]);
    });

    it('when the same authorization is recorded twice, then the second insert is refused (one payment per network, asset, payer, nonce)', async () => {
      await pool.query(
        `INSERT INTO payments (purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, payload, requirements)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)`,
        Object.values(payment()),
      );
      try {
        await pool.query(
          `INSERT INTO payments (purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, payload, requirements)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)`,
          Object.values(payment({ amount_atomic: '5' })),
        );
        expect.fail('a replayed authorization was stored twice');
      } catch (err) {
        expect((err as { code?: string }).code).to.equal('23505');
      }
    });

    it('amounts are exact integers: negative and fractional amounts are refused, uint256-sized ones kept', async () => {
      const insert = (amount: string, nonce: string) =>
        pool.query(
          `INSERT INTO payments (purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, payload, requirements)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) RETURNING amount_atomic`,
          Object.values(payment({ amount_atomic: amount, nonce })),
        );
      const max = (2n ** 256n - 1n).toString();
      expect((await insert(max, '0x02')).rows[0].amount_atomic).to.equal(max);
      for (const bad of ['-1', '1.5', (2n ** 256n).toString()]) {
        const err = await insert(bad, `0x1${bad.length}`).then(
          () => null,
          (e) => e,
        );
        expect(err, `amount ${bad}`).to.not.equal(null);
      }
    });

    it('handles are unique and well-formed', async () => {
      await pool.query('INSERT INTO agents (handle, wallet_address) VALUES ($1, $2)', ['alice', `0x${'d'.repeat(40)}`]);
      const dup = await pool
        .query('INSERT INTO agents (handle, wallet_address) VALUES ($1, $2)', ['alice', `0x${'e'.repeat(40)}`])
        .catch((e) => e);
      expect(dup.code).to.equal('23505');
      for (const bad of ['a', 'Alice', '-bob', 'bob-', 'x'.repeat(33), 'b_b']) {
        const err = await pool
          .query('INSERT INTO agents (handle, wallet_address) VALUES ($1, $2)', [bad, `0x${'f'.repeat(40)}`])
          .catch((e) => e);
        expect(err?.code, `handle ${bad}`).to.equal('23514');
      }
    });

    it('every change to an agent records the id of the transaction that made it (what the feeds order by)', async () => {
      const a = await pool.query(
        "INSERT INTO agents (handle, wallet_address) VALUES ('seq-a', $1) RETURNING change_txid::text",
        [`0x${'0'.repeat(39)}1`],
      );
      const b = await pool.query(
        "UPDATE agents SET bio = 'changed' WHERE handle = 'seq-a' RETURNING change_txid::text",
      );
      expect(BigInt(b.rows[0].change_txid) > BigInt(a.rows[0].change_txid)).to.equal(true);
    });

    /**
     * Runs `fn` with a migrations directory of one migration altering agents, while an old
     * process's long transaction has read agents (and holds its shared lock) on `holder`; then
     * ends that transaction and forgets the migration.
     */
    async function whileAgentsRead(fn: (dir: string, holder: pg.PoolClient) => Promise<void>) {
      const dir = mkdtempSync(join(tmpdir(), 'migrations-'));
      writeFileSync(join(dir, '9999_lock_probe.sql'), 'ALTER TABLE agents ADD COLUMN lock_probe integer;');
      const holder = await pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT count(*) FROM agents');
        await fn(dir, holder);
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        holder.release();
        await pool.query('ALTER TABLE agents DROP COLUMN IF EXISTS lock_probe');
        await pool.query("DELETE FROM schema_migrations WHERE name = '9999_lock_probe.sql'");
        rmSync(dir, { recursive: true, force: true });
      }
    }

    it("a migration that needs a table a long transaction is reading does not stall the table's readers, and applies once it ends", async () => {
      await whileAgentsRead(async (dir, holder) => {
        const migrating = migrate(pool, { dir, lockTimeoutMs: 100, retryDelayMs: 20, attempts: 1_000 });
        // A reader arriving meanwhile waits at most about one lock timeout, never for the long
        // transaction (a migration queued without a timeout would hold it until that ends).
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          const read = await Promise.race([
            pool.query('SELECT count(*) FROM agents').then(() => 'read'),
            new Promise((resolve) => setTimeout(() => resolve('stalled'), 3_000)),
          ]);
          expect(read).to.equal('read');
          expect(performance.now() - started).to.be.below(1_000);
        }
        await holder.query('COMMIT');
        expect(await migrating).to.deep.equal(['9999_lock_probe.sql']);
        const { rows } = await pool.query(
          "SELECT 1 FROM information_schema.columns WHERE table_name = 'agents' AND column_name = 'lock_probe'",
        );
        expect(rows).to.have.length(1);
      });
    });

    it('a migration still refused its lock after its last attempt fails the start with a clear error', async () => {
      await whileAgentsRead(async (dir) => {
        const err = await migrate(pool, { dir, lockTimeoutMs: 50, retryDelayMs: 10, attempts: 3 }).catch((e) => e);
        expect(String(err?.message)).to.match(
          /^migration 9999_lock_probe\.sql failed \(after 3 attempts\): .*lock timeout/,
        );
        const { rows } = await pool.query("SELECT 1 FROM schema_migrations WHERE name = '9999_lock_probe.sql'");
        expect(rows).to.have.length(0);
      });
    });

    /**
     * Runs `fn` with a migrations directory holding `files` (name to SQL), then drops the probe
     * table they build and forgets them.
     */
    async function withMigrations(files: Record<string, string>, fn: (dir: string) => Promise<void>) {
      const dir = mkdtempSync(join(tmpdir(), 'migrations-'));
      for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
      try {
        await fn(dir);
      } finally {
        await pool.query('DROP TABLE IF EXISTS index_probe');
        await pool.query('DELETE FROM schema_migrations WHERE name = ANY($1)', [Object.keys(files)]);
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const probeIndexes = async () =>
      (
        await pool.query<{ name: string; valid: boolean }>(
          `SELECT indexrelid::regclass::text AS name, indisvalid AS valid FROM pg_index
           WHERE indrelid = 'index_probe'::regclass ORDER BY 1`,
        )
      ).rows;
    const CONCURRENT_INDEX = [
      '-- migrate: without transaction',
      '-- A comment line; statements end their line with a semicolon.',
      'CREATE INDEX CONCURRENTLY IF NOT EXISTS index_probe_a_idx',
      '  ON index_probe (a);',
      '',
    ].join('\n');

    it('a migration marked to run without a transaction builds an index concurrently, beside replicas waiting to migrate', async () => {
      // The first migration takes a moment, so the other replicas are waiting for the migration
      // lock when the index is built. Had they waited in a statement (with its snapshot), the
      // build would have waited for them while they waited for it: PostgreSQL reports a deadlock.
      await withMigrations(
        {
          '9990_probe_table.sql': 'CREATE TABLE index_probe (a integer); SELECT pg_sleep(0.5);',
          '9991_probe_index.sql': CONCURRENT_INDEX,
        },
        async (dir) => {
          const results = await Promise.all([migrate(pool, { dir }), migrate(pool, { dir }), migrate(pool, { dir })]);
          expect(results.flat().sort()).to.deep.equal(['9990_probe_table.sql', '9991_probe_index.sql']);
          expect(await probeIndexes()).to.deep.equal([{ name: 'index_probe_a_idx', valid: true }]);
          // Run again (as after a start cut off before it was recorded), an index built whole is kept.
          const oid = async () => (await pool.query("SELECT 'index_probe_a_idx'::regclass::oid AS oid")).rows[0].oid;
          const built = await oid();
          await pool.query("DELETE FROM schema_migrations WHERE name = '9991_probe_index.sql'");
          expect(await migrate(pool, { dir })).to.deep.equal(['9991_probe_index.sql']);
          expect(await oid()).to.equal(built);
        },
      );
    });

    it("a concurrent index build waits out an old transaction, past the lock timeout, while the table's writers go on", async () => {
      await withMigrations({ '9991_probe_index.sql': CONCURRENT_INDEX }, async (dir) => {
        await pool.query('CREATE TABLE index_probe (a integer)');
        // An old process's transaction holds a snapshot: a concurrent build waits for it to end.
        const holder = await pool.connect();
        try {
          await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
          await holder.query('SELECT count(*) FROM agents');
          const migrating = migrate(pool, { dir, lockTimeoutMs: 50, retryDelayMs: 10, attempts: 2 });
          // The build waits (its half-built index is there, not yet valid), well past the timeout.
          await eventually(async () => (await probeIndexes()).some((i) => !i.valid), 10_000);
          await eventually(
            async () =>
              (
                await pool.query(
                  "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock' AND query_start < now() - interval '500 milliseconds'",
                )
              ).rowCount,
            10_000,
          );
          // Meanwhile the table is written and read as ever.
          const started = performance.now();
          await pool.query('INSERT INTO index_probe VALUES (1), (2)');
          expect((await pool.query('SELECT count(*)::int AS n FROM index_probe')).rows[0].n).to.equal(2);
          expect(performance.now() - started).to.be.below(1_000);
          await holder.query('COMMIT');
          expect(await migrating).to.deep.equal(['9991_probe_index.sql']);
        } finally {
          await holder.query('ROLLBACK').catch(() => undefined);
          holder.release();
        }
        expect(await probeIndexes()).to.deep.equal([{ name: 'index_probe_a_idx', valid: true }]);
      });
    });

    it('a build left half-done by a process that died is replaced when the migration runs again', async () => {
      await withMigrations({ '9991_probe_index.sql': CONCURRENT_INDEX }, async (dir) => {
        await pool.query('CREATE TABLE index_probe (a integer); INSERT INTO index_probe VALUES (1)');
        // What a build cut off leaves: the index, marked invalid, and the migration not recorded.
        const killed = await pool.connect();
        killed.on('error', () => undefined); // its session is ended under it
        const pid = (await killed.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        const holder = await pool.connect();
        try {
          await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
          await holder.query('SELECT count(*) FROM agents');
          const building = killed
            .query('CREATE INDEX CONCURRENTLY index_probe_a_idx ON index_probe (a)')
            .catch((e) => e);
          await eventually(async () => (await probeIndexes()).some((i) => !i.valid), 10_000);
          await pool.query('SELECT pg_terminate_backend($1)', [pid]);
          await building;
        } finally {
          await holder.query('ROLLBACK').catch(() => undefined);
          holder.release();
          killed.release(true);
        }
        expect(await probeIndexes()).to.deep.equal([{ name: 'index_probe_a_idx', valid: false }]);
        expect(await migrate(pool, { dir })).to.deep.equal(['9991_probe_index.sql']);
        expect(await probeIndexes()).to.deep.equal([{ name: 'index_probe_a_idx', valid: true }]);
      });
    });

    it('a migration without a transaction cannot hold a dollar-quoted body, which the statements would be split inside', async () => {
      await withMigrations(
        { '9992_probe_body.sql': '-- migrate: without transaction\nDO $$ BEGIN PERFORM 1; END $$;\n' },
        async (dir) => {
          const err = await migrate(pool, { dir }).catch((e) => e);
          expect(String(err?.message)).to.equal(
            'migration 9992_probe_body.sql failed: a migration without a transaction cannot hold dollar-quoted bodies',
          );
        },
      );
    });

    it("the purchases' seller and skill counts are index-only scans", async () => {
      const { rows } = await pool.query<{ name: string; def: string }>(
        `SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def FROM pg_index
         WHERE indrelid = 'purchases'::regclass AND indisvalid ORDER BY 1`,
      );
      const defs = rows.map((r) => r.def.replace(/^.* USING btree /, ''));
      expect(defs).to.include(
        '(seller_id, created_at) INCLUDE (buyer_address, buyer_agent_id, amount_atomic, change_txid)',
      );
      expect(defs).to.include('(post_id, buyer_address) INCLUDE (buyer_agent_id, seller_id)');
      const names = rows.map((r) => r.name);
      for (const replaced of ['purchases_seller_idx', 'purchases_entitlement_idx', 'purchases_seller_covering_idx'])
        expect(names).to.not.include(replaced);
    });
  });
});
