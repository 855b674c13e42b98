import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
// Any constant works; it only has to be the same for every replica that migrates at start.
const MIGRATION_LOCK_KEY = 8_004_402;

/**
 * Applies `migrations/*.sql` in name order, each in its own transaction, once. An advisory lock
 * makes concurrent replicas starting together wait for each other instead of racing.
 * Returns the names it applied.
 */
export async function migrate(pool: pg.Pool): Promise<string[]> {
  const client = await pool.connect();
  const applied: string[] = [];
  let timeout: string | undefined;
  try {
    // No statement timeout here: a replica waits for another's migrations on the lock, and a
    // migration may rewrite a large table. The pool's timeout is put back before the connection is.
    timeout = (await client.query<{ t: string }>("SELECT current_setting('statement_timeout') AS t")).rows[0]?.t;
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name),
    );
    for (const file of readdirSync(MIGRATIONS_DIR)
      .filter((f) => f.endsWith('.sql'))
      .sort()) {
      if (done.has(file)) continue;
      const sql = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
        await client.query('COMMIT');
        applied.push(file);
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file} failed: ${(err as Error).message}`, { cause: err });
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
