import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { Kysely, PostgresDialect, sql, type PostgresCursor, type PostgresPool, type PostgresPoolClient } from 'kysely';
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
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: preparing(pool) }) });
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
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: preparing(pool) }) });
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

/**
 * Put first in a statement (`sql\`${PREPARED} SELECT …\``) to have it prepared once per
 * connection: PostgreSQL then plans it once, where planning a large statement on every call can
 * cost as much as running it (search: 0.7 ms of planning for 1-2 ms of work). Only for statements
 * whose text is fixed (values as parameters, a bounded number of variants), and whose best plan
 * does not depend on the values: after five calls PostgreSQL may keep one generic plan.
 */
export const PREPARED = sql.raw('/* prepared */');
const MARKED = /^\s*\/\* prepared \*\//;

/** The pool as Kysely sees it: statements marked PREPARED run as named prepared statements. */
function preparing(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect();
      return {
        query: ((text: string | PostgresCursor<unknown>, values?: readonly unknown[]) => {
          if (typeof text !== 'string' || !MARKED.test(text)) return client.query(text as never, values as unknown[]);
          const name = `p_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
          return client.query({ name, text, values: values as unknown[] });
        }) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      };
    },
    end: () => pool.end(),
  };
}
