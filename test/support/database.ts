import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Db } from '../../src/data/db.js';
import type { DB } from '../../src/data/schema.js';
import { migrate } from '../../src/data/migrate.js';
import { TEST_PG_URL } from './env.js';

const MIGRATIONS = join(import.meta.dirname, '../../src/data/migrations');

/** A template named after the migrations' content: a changed migration gets a fresh template. */
function templateName(): string {
  const hash = createHash('sha256');
  for (const f of readdirSync(MIGRATIONS).sort()) hash.update(f).update(readFileSync(join(MIGRATIONS, f)));
  return `market_tmpl_${hash.digest('hex').slice(0, 12)}`;
}

const withUrlDb = (url: string, db: string) => {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
};

let templateReady: Promise<string> | undefined;

async function ensureTemplate(admin: pg.Client): Promise<string> {
  const name = templateName();
  const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  if (exists.rowCount) return name;
  const building = `${name}_build_${randomBytes(3).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${building}`);
  const pool = new pg.Pool({ connectionString: withUrlDb(TEST_PG_URL, building), max: 1 });
  await migrate(pool);
  await pool.end();
  try {
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
  } catch {
    // Another run built it meanwhile; theirs is as good as ours.
    await admin.query(`DROP DATABASE IF EXISTS ${building}`);
  }
  return name;
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh, migrated database cloned from the template (milliseconds, not a migration run). */
export async function freshDatabase(): Promise<TestDatabase> {
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    templateReady ??= ensureTemplate(admin);
    const template = await templateReady;
    const name = `market_test_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
    return {
      url: withUrlDb(TEST_PG_URL, name),
      name,
      async drop() {
        const c = new pg.Client({ connectionString: TEST_PG_URL });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  } finally {
    await admin.end();
  }
}

/**
 * How many times the server has synced its WAL to disk so far (pg_stat_wal), with every sync of
 * `db`'s own session counted: give it a pool of one connection, so it is always that session. A
 * commit that waits for its WAL adds one; one with synchronous_commit off adds none of its own.
 */
export async function walSyncs(db: Db): Promise<number> {
  await sql`SELECT pg_stat_force_next_flush()`.execute(db);
  const { rows } = await sql<{ syncs: string }>`SELECT wal_sync::text AS syncs FROM pg_stat_wal`.execute(db);
  return Number(rows[0]?.syncs);
}

/** A fresh database with a pool and a Kysely over it; `close` ends both and drops the database. */
export interface OpenTestDatabase {
  pool: pg.Pool;
  db: Db;
  close(): Promise<void>;
}

/** `freshDatabase` opened: what a database test of the repositories starts from. */
export async function openTestDatabase(max = 2): Promise<OpenTestDatabase> {
  const database = await freshDatabase();
  const pool = new pg.Pool({ connectionString: database.url, max });
  pool.on('error', () => undefined); // idle clients of a database being dropped
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    pool,
    db,
    async close() {
      await db.destroy();
      await database.drop();
    },
  };
}
