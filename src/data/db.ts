import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import {
  Kysely,
  type CompiledQuery,
  PostgresDialect,
  sql,
  type PostgresCursor,
  type PostgresPool,
  type PostgresQueryResult,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import type { DB } from './schema.js';
import type { Logger } from '../platform/logger.js';
import { DependencyUnavailableError } from '../platform/errors.js';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  connectionLost,
  isConnectionFailure,
  isStalePreparedStatement,
  toDependencyError,
  watchConnection,
} from './connection-failures.js';

export type Db = Kysely<DB>;
/** What a repository function runs on: the pool, or a transaction the use case opened. */
export type Executor = Db | Transaction<DB>;

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
  /** Longest wait for a connection, new or from a full pool, before a 503 (default 5 s). */
  connectTimeoutMs?: number;
  /** statement_timeout of every session (default 30 s); `withStatementTimeout` raises it for batch work. */
  statementTimeoutMs?: number;
  /** A statement returning more rows than this is logged with its SQL (every read is meant to be bounded). */
  largeResultRows?: number;
  /** A checking mode: a sequential scan reading more rows than this is logged (watchSequentialScans). */
  largeScanRows?: number;
}

/** How long a session may sit idle inside a transaction before the server ends it (a leaked transaction holds locks). */
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;
/** Statement timeout for the batch jobs (full recompute, rankings and search tier at a million skills). */
export const BATCH_STATEMENT_TIMEOUT_MS = 15 * 60_000;

/**
 * Opens PostgreSQL through `pg` + Kysely. Without a URL it starts embedded PGlite and exposes it
 * on a loopback port through pglite-socket, so the embedded database is reached by exactly the
 * same driver, SQL and transaction code as a production server. PGlite is single-connection,
 * so the embedded pool holds one connection: inside a transaction always use the transaction
 * handle, never the pool (that would wait for itself).
 */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.url) {
    const statementTimeoutMs = opts.statementTimeoutMs ?? 30_000;
    // Idle connections kept a minute (pg's default is 10 s): a worker's bursts of parallel reads
    // otherwise opened a new server process every few seconds, each rebuilding its catalog caches.
    // A connect timeout bounds both opening a connection and waiting for a free one: a request
    // fails fast with 503 instead of hanging while the server is unreachable. Keepalive finds a
    // connection whose server vanished without closing it (a failover, a dropped route).
    const pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolMax,
      idleTimeoutMillis: 60_000,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // Each new connection, before its first checkout (awaited: nothing queues behind it).
      onConnect: async (client: pg.ClientBase) => {
        watchConnection(client, (err) => opts.log.warn({ err }, 'database connection lost; it is discarded'));
        // No JIT: our statements are short and planned against large tables, so their estimated
        // costs pass jit_above_cost and each paid 200-300 ms of compilation for a few ms of work
        // (seen on the per-agent batch statements). A SET rather than a startup option, which
        // PgBouncer refuses; behind a transaction-mode pooler the SET does not stick, and the server's
        // own setting (jit = off in postgresql.conf, docs/decisions/0005) is what counts.
        await client
          .query('SET jit = off')
          .catch((err: unknown) => opts.log.warn({ err }, 'could not turn JIT off for a database connection'));
        // The timeouts likewise. A connection that cannot take them is not handed out.
        await client.query(
          `SET statement_timeout = ${statementTimeoutMs}; SET idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_TIMEOUT_MS}`,
        );
        if (opts.largeScanRows !== undefined) await watchSequentialScans(client, opts.largeScanRows, opts.log);
      },
    });
    // Required, or an idle client's failure is an unhandled 'error' on the pool; the client's own
    // listener (watchConnection) already logged it.
    pool.on('error', (err) => opts.log.debug({ err }, 'idle database client discarded'));
    const db = new Kysely<DB>({
      dialect: new PostgresDialect({ pool: preparing(pool, statementTimeoutMs, largeResultGuard(opts)) }),
    });
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
  pool.on('error', (err) => opts.log.debug({ err }, 'idle embedded database client discarded'));
  pool.on('connect', (client) =>
    watchConnection(client, (err) => opts.log.warn({ err }, 'embedded database connection lost; it is discarded')),
  );
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

/**
 * Runs a query built with Kysely's builder as a PREPARED statement, for the builder's queries on
 * the paid path (the same rules apply: a fixed text whose best plan does not depend on the values).
 */
export async function executePrepared<O>(db: Executor, query: { compile(): CompiledQuery<O> }): Promise<O[]> {
  const compiled = query.compile();
  const { rows } = await db.executeQuery<O>({ ...compiled, sql: `/* prepared */ ${compiled.sql}` });
  return rows;
}

const statementTimeoutScope = new AsyncLocalStorage<number>();

/**
 * Runs `fn` with `ms` as the statement timeout of every statement it sends through Kysely (each
 * connection it checks out is SET to `ms`, and back to the default before it is returned). For
 * batch jobs whose statements legitimately run longer than a request's. No effect on the
 * embedded database, which has no timeout.
 */
export function withStatementTimeout<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  return statementTimeoutScope.run(ms, fn);
}

/**
 * Logs a statement whose result has more rows than the limit: the reads are meant to be paged or
 * bounded whatever the catalogue's size, so such a line names a read that grows with it (the
 * scale smoke test fails on one).
 */
function largeResultGuard(opts: DatabaseOptions): (text: string, result: pg.QueryResult) => void {
  const limit = opts.largeResultRows;
  if (limit === undefined) return () => undefined;
  return (text, result) => {
    const rows = result.rows?.length ?? 0;
    if (rows > limit) opts.log.warn({ rows, limit, sql: text.slice(0, 500) }, 'large database result');
  };
}

/** The plan of one statement as auto_explain's JSON gives it (the members read here). */
interface PlanNode {
  'Node Type'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** The sequential scans of a plan, with the rows each read (returned and filtered out, over all its loops). */
export function sequentialScans(plan: PlanNode): Array<{ relation: string; rows: number }> {
  const found: Array<{ relation: string; rows: number }> = [];
  const walk = (n: PlanNode) => {
    if (n['Node Type'] === 'Seq Scan' && n['Relation Name'])
      found.push({
        relation: n['Relation Name'],
        rows: ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1),
      });
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan);
  return found;
}

/**
 * The checking mode of DATABASE_LARGE_SCAN_ROWS (the scale smoke test): the session runs every
 * statement under auto_explain with row counts (no timing), and its plan comes back as a notice;
 * a sequential scan that read more than `limit` rows is logged with its table and SQL. A read
 * that scans a table grows with the catalogue, whatever it returns. Without the module or the
 * right to load it, says so once per connection and checks nothing.
 */
async function watchSequentialScans(client: pg.ClientBase, limit: number, log: Logger): Promise<void> {
  try {
    await client.query(
      `LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;
       SET auto_explain.log_timing = off; SET auto_explain.log_format = json; SET auto_explain.log_level = notice`,
    );
  } catch (err) {
    log.warn({ err }, 'sequential scans are not checked: auto_explain could not be loaded');
    return;
  }
  client.on('notice', (notice: { message?: string }) => {
    const text = notice.message ?? '';
    const start = text.indexOf('{');
    if (!text.startsWith('duration:') || start < 0) return;
    let explained: { 'Query Text'?: string; Plan?: PlanNode };
    try {
      explained = JSON.parse(text.slice(start));
    } catch {
      return;
    }
    for (const scan of explained.Plan ? sequentialScans(explained.Plan) : [])
      if (scan.rows > limit)
        log.warn({ ...scan, limit, sql: (explained['Query Text'] ?? '').slice(0, 500) }, 'large sequential scan');
  });
}

/**
 * The pool as Kysely sees it. Statements marked PREPARED run as named prepared statements. Every
 * failure to reach the database (no connection in time, a lost connection, a statement timeout)
 * becomes `DependencyUnavailableError`, so each caller answers 503 with Retry-After; a client
 * whose connection failed is released with its error, so the pool discards it and opens a new
 * one on demand (recovery needs no restart).
 */
function preparing(
  pool: pg.Pool,
  statementTimeoutMs?: number,
  checkResult: (text: string, result: pg.QueryResult) => void = () => undefined,
): PostgresPool {
  const unavailable = (cause: unknown) =>
    new DependencyUnavailableError('database', DATABASE_RETRY_AFTER_SECONDS, { cause });
  return {
    async connect() {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        // Whatever keeps us from a connection (refused, too many clients, the server starting or
        // shutting down, no free client within the connect timeout) is the database being unavailable.
        throw unavailable(err);
      }
      let broken: unknown;
      const guard = <T>(pending: Promise<T>): Promise<T> =>
        pending.catch((err: unknown) => {
          // A statement this connection prepared before a migration changed its table: the
          // connection goes, so the retry the 503 asks for prepares it afresh on another.
          if (connectionLost(client) || isConnectionFailure(err) || isStalePreparedStatement(err)) {
            broken ??= err;
            throw unavailable(err);
          }
          throw toDependencyError(err);
        });
      const scoped = statementTimeoutMs === undefined ? undefined : statementTimeoutScope.getStore();
      if (scoped !== undefined) {
        try {
          await guard(client.query(`SET statement_timeout = ${Math.trunc(scoped)}`));
        } catch (err) {
          client.release(broken instanceof Error ? broken : true);
          throw err;
        }
      }
      // Kysely's client type has two overloads (a statement, or a cursor it streams rows through).
      function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
      function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
      function query(text: string | PostgresCursor<unknown>, values?: readonly unknown[]): unknown {
        // The cursor Kysely streams through is pg-cursor's, which pg submits as it is.
        if (typeof text !== 'string') return client.query(text as PostgresCursor<unknown> & pg.Submittable);
        const params = values as unknown[] | undefined;
        const checked = (result: pg.QueryResult) => {
          checkResult(text, result);
          return result;
        };
        if (!MARKED.test(text)) return guard(client.query(text, params)).then(checked);
        const name = `p_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
        return guard(client.query({ name, text, values: params })).then(checked);
      }
      return {
        query,
        release: () => {
          if (broken !== undefined || connectionLost(client))
            return client.release(broken instanceof Error ? broken : true);
          if (scoped === undefined) return client.release();
          // Back to the default before another caller gets it; discarded if that fails.
          client.query(`SET statement_timeout = ${statementTimeoutMs}`).then(
            () => client.release(),
            (err: Error) => client.release(err),
          );
        },
      };
    },
    end: () => pool.end(),
  };
}

/** Whether a statement failed on a unique constraint (SQLSTATE 23505); the error names the constraint. */
export function isUniqueViolation(err: unknown): err is { constraint?: string } {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}
