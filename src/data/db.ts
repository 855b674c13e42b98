import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DB } from './schema.js';
import type { Logger } from '../platform/logger.js';

export type Db = Kysely<DB>;

export interface Database {
  db: Db;
  pool: pg.Pool;
  /** Connection string, also for the embedded server (psql can connect to it while it runs). */
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  url?: string;
  poolMax: number;
  /** Where embedded PGlite keeps its files; `memory://` for a throwaway database. */
  embeddedDataDir: string;
  log: Logger;
}

/**
 * Opens PostgreSQL through `pg` + Kysely. Without a URL it starts embedded PGlite and exposes it
 * on a loopback port through pglite-socket, so the embedded database is reached by exactly the
 * same driver, SQL and transaction code as a production server. PGlite is single-connection,
 * so the embedded pool holds one connection: inside a transaction always use the transaction
 * handle, never the pool (that would wait for itself).
 */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.url) {
    // Idle connections kept a minute (pg's default is 10 s): a worker's bursts of parallel reads
    // otherwise opened a new server process every few seconds, each rebuilding its catalog caches.
    const pool = new pg.Pool({ connectionString: opts.url, max: opts.poolMax, idleTimeoutMillis: 60_000 });
    pool.on('error', (err) => opts.log.error({ err }, 'idle database client failed'));
    // No JIT: our statements are short and planned against large tables, so their estimated
    // costs pass jit_above_cost and each paid 200-300 ms of compilation for a few ms of work
    // (seen on the per-agent batch statements). A SET rather than a startup option, which
    // PgBouncer refuses; behind a transaction-mode pooler the SET does not stick, and the server's
    // own setting (jit = off in postgresql.conf, docs/decisions/0005) is what counts.
    pool.on('connect', (client) => {
      client.query('SET jit = off').catch((err: unknown) => opts.log.warn({ err }, 'could not turn JIT off for a database connection'));
    });
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    return { db, pool, url: opts.url, embedded: false, close: () => db.destroy() };
  }
  const [{ PGlite }, { pg_trgm }, { fuzzystrmatch }, { PGLiteSocketServer }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('@electric-sql/pglite/contrib/fuzzystrmatch'),
    import('@electric-sql/pglite-socket'),
  ]);
  let dataDir = opts.embeddedDataDir;
  if (!dataDir.startsWith('memory://')) {
    mkdirSync(dataDir, { recursive: true });
    dataDir = join(dataDir);
  }
  const lite = await PGlite.create({ dataDir, extensions: { pg_trgm, fuzzystrmatch } });
  const server = new PGLiteSocketServer({ db: lite, port: 0, host: '127.0.0.1' });
  await server.start();
  const url = `postgres://postgres@${server.getServerConn()}/postgres`;
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', (err) => opts.log.error({ err }, 'embedded database client failed'));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  opts.log.info({ dataDir, url }, 'embedded PGlite database started');
  return {
    db,
    pool,
    url,
    embedded: true,
    async close() {
      await db.destroy();
      await server.stop();
      await lite.close();
    },
  };
}
