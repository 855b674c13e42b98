import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
// Any constant works; it only has to be the same for every replica that migrates at start.
const MIGRATION_LOCK_KEY = 8_004_402;

export interface MigrateOptions {
  /** Where the migration files are (the service's own by default). */
  dir?: string;
  /** How long a migration's statement waits for a table lock before its attempt is given up. */
  lockTimeoutMs?: number;
  /** Attempts per migration, one every `retryDelayMs`, before the start fails. */
  attempts?: number;
  retryDelayMs?: number;
}

/** PostgreSQL's lock_not_available: a statement's lock_timeout passed. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * The first line of a migration that runs outside a transaction, statement by statement: what
 * PostgreSQL refuses inside one, `CREATE INDEX CONCURRENTLY` and `DROP INDEX CONCURRENTLY` (which
 * build and drop an index on a large table without holding its readers or writers). Such a file
 * holds plain statements, each ending its line with `;` (no dollar-quoted bodies, no comment after
 * the `;`), and is run again from its start when an attempt was cut off (a killed process, a lost
 * connection): it is recorded only once every statement ran. Write its builds as `CREATE INDEX
 * CONCURRENTLY IF NOT EXISTS name`: an index a cut-off build left invalid is dropped before each
 * attempt, and one built whole is kept. Make each step a migration of its own.
 *
 * Its statements wait for their locks without a timeout: a concurrent build or drop queues no
 * other session's reads or writes behind it, but waits for every transaction older than it in
 * the database (a batch statement of minutes included), and a timeout would throw away a build
 * that had finished.
 */
const WITHOUT_TRANSACTION = /^-- migrate: without transaction[ \t]*\r?\n/;
/** The index names a migration without a transaction builds (`CREATE INDEX CONCURRENTLY IF NOT EXISTS`). */
const BUILT_IF_NOT_EXISTS = /CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+([a-z_][a-z0-9_]*)/gi;

/** How often a replica asks again for the lock another replica holds while migrating. */
const LOCK_POLL_MS = 200;

/**
 * Applies `migrations/*.sql` in name order, each in its own transaction (but those marked to run
 * without one, above), once. An advisory lock
 * makes concurrent replicas starting together wait for each other instead of racing.
 *
 * During a rolling update the old processes keep working on the tables a migration alters. A
 * statement that needs an exclusive lock queues behind their transactions, and every read of the
 * table then queues behind it: one long transaction would stall the whole service. So each
 * statement waits at most `lockTimeoutMs` (2 s) for its lock; then the migration's transaction is
 * rolled back, the queue behind it drains, and it is tried again a second later, 60 attempts in
 * all before the start fails. Returns the names it applied.
 *
 * A replica waiting for another's migrations asks for the advisory lock again every 200 ms rather
 * than waiting in a statement: a waiting statement holds a snapshot, and `CREATE INDEX
 * CONCURRENTLY` on the other replica waits for every snapshot older than its own.
 */
export async function migrate(pool: pg.Pool, options: MigrateOptions = {}): Promise<string[]> {
  const { dir = MIGRATIONS_DIR, lockTimeoutMs = 2_000, attempts = 60, retryDelayMs = 1_000 } = options;
  const client = await pool.connect();
  const applied: string[] = [];
  let timeout: string | undefined;
  try {
    // No statement timeout here: a replica waits for another's migrations on the lock, and a
    // migration may rewrite a large table. The pool's timeout is put back before the connection is.
    timeout = (await client.query<{ t: string }>("SELECT current_setting('statement_timeout') AS t")).rows[0]?.t;
    await client.query('SET statement_timeout = 0');
    while (
      !(await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [MIGRATION_LOCK_KEY])).rows[0]?.ok
    ) {
      await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
    }
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name),
    );
    for (const file of readdirSync(dir)
      .filter((f) => f.endsWith('.sql'))
      .sort()) {
      if (done.has(file)) continue;
      const sql = readFileSync(join(dir, file), 'utf8');
      const apply = WITHOUT_TRANSACTION.test(sql) ? applyWithoutTransaction : applyInTransaction;
      for (let attempt = 1; ; attempt++) {
        try {
          await apply(client, file, sql, Math.max(1, Math.round(lockTimeoutMs)));
          applied.push(file);
          break;
        } catch (err) {
          if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE && attempt < attempts) {
            await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
            continue;
          }
          const tries = attempt > 1 ? ` (after ${attempt} attempts)` : '';
          throw new Error(`migration ${file} failed${tries}: ${(err as Error).message}`, { cause: err });
        }
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    // A connection whose timeout could not be put back is discarded rather than reused without one.
    const restore =
      timeout === undefined ? undefined : client.query("SELECT set_config('statement_timeout', $1, false)", [timeout]);
    client.release(
      await restore?.then(
        () => undefined,
        (err: Error) => err,
      ),
    );
  }
  return applied;
}

/** One migration in one transaction, recorded in it. */
async function applyInTransaction(client: pg.PoolClient, file: string, sql: string, lockTimeoutMs: number) {
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
    await client.query(sql);
    await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

/** One migration statement by statement, each in its own implicit transaction; recorded once all ran. */
async function applyWithoutTransaction(client: pg.PoolClient, file: string, sql: string) {
  if (sql.includes('$$')) throw new Error('a migration without a transaction cannot hold dollar-quoted bodies');
  const statements = sql
    .split(/;[ \t]*(?:\r?\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.split('\n').some((line) => line.trim() && !line.trim().startsWith('--')));
  // A build goes on in its server session after its client is gone, holding the migration lock, unless
  // the server looks for the client while it runs.
  await client.query("SET lock_timeout = 0; SET client_connection_check_interval = '1s'");
  try {
    for (const name of sql.matchAll(BUILT_IF_NOT_EXISTS)) {
      const { rows } = await client.query<{ invalid: boolean }>(
        'SELECT NOT i.indisvalid AS invalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)',
        [name[1]],
      );
      if (rows[0]?.invalid) await client.query(`DROP INDEX CONCURRENTLY ${name[1]}`);
    }
    for (const statement of statements) await client.query(statement);
    await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
  } finally {
    // A failure to put it back (a connection lost) must not hide the statement's own error.
    await client.query('RESET lock_timeout; RESET client_connection_check_interval').catch(() => undefined);
  }
}
