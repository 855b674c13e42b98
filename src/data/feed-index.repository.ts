import { sql, type RawBuilder } from 'kysely';
import type { Db } from './db.js';

export type FeedKind = 'agent' | 'post';
const LOCK_KEY: Record<FeedKind, number> = { agent: 8_004_101, post: 8_004_102 };

/**
 * The oldest transaction that may still write to this database: the smallest xid the snapshot
 * sees in progress, skipping those positively known to run in another database of the same
 * server (they cannot touch our tables), or the snapshot's xmax when none is left. Transaction ids
 * are cluster-wide, so the plain snapshot xmin would let a long bulk load in a neighbouring
 * database pause the feeds. Only xids seen with another datname are skipped: one that ended
 * between the two reads, hides its database (no pg_read_all_stats) or is a subtransaction is kept,
 * which only delays the feed, never skips a change.
 */
export const ourHorizon = sql`(
  SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(s.snap) AS x
     WHERE (x::text::numeric % 4294967296)::text NOT IN (
       SELECT backend_xid::text FROM pg_stat_activity
       WHERE backend_xid IS NOT NULL AND datname IS NOT NULL AND datname <> current_database())),
    pg_snapshot_xmax(s.snap))
  FROM (SELECT pg_current_snapshot() AS snap) s)`;

/**
 * The item each changed entity would show now (the SQL functions of migration 0015, the one
 * definition of what a feed item shows), read with the entity's change_txid.
 */
const CHANGED: Record<FeedKind, (watermark: string, xmin: string) => RawBuilder<unknown>> = {
  agent: (watermark, xmin) => sql`
    SELECT c.id, c.change_txid, feed_agent_item(c, m) AS item
    FROM agents c LEFT JOIN agent_metrics m ON m.agent_id = c.id
    WHERE c.change_txid >= ${watermark}::xid8 AND c.change_txid < ${xmin}::xid8`,
  post: (watermark, xmin) => sql`
    SELECT c.id, c.change_txid, feed_post_item(c, a.handle) AS item
    FROM posts c JOIN agents a ON a.id = c.author_id
    WHERE c.change_txid >= ${watermark}::xid8 AND c.change_txid < ${xmin}::xid8`,
};

/**
 * Moves committed changes into the feed, for one kind, at most one indexer at a time (a
 * transaction-scoped advisory lock; others skip). Only changes by transactions below `ourHorizon`
 * are taken: every one of those has ended, so none can still appear behind the feed's end.
 * A long transaction holds the watermark back; it never lets the feed skip it. A changed entity
 * whose item differs from the one its entry keeps gets a new feed_at, strictly after every
 * existing one (1 µs apart), so readers can page on it, and the entry keeps the new item: what a
 * place in the feed shows never changes, and every change to what an item shows moves it. A
 * change the item does not show (a bio, a score moving within its hundredth) moves nothing.
 * Returns how many entries were written, or null when another indexer holds the lock.
 */
export async function indexFeed(db: Db, kind: FeedKind): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
    // Raw SQL below: advisory locks, xid8 and snapshot functions, a MATERIALIZED CTE and the row-typed
    // item functions of migration 0015, none of which Kysely's builder has a form for.
    const locked = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${LOCK_KEY[kind]}) AS ok`.execute(trx);
    if (!locked.rows[0]?.ok) return null;
    const { rows } = await sql<{ watermark: string; horizon: string }>`
      SELECT coalesce((SELECT watermark FROM feed_watermarks WHERE kind = ${kind}), '0'::xid8)::text AS watermark,
             ${ourHorizon}::text AS horizon`.execute(trx);
    // A SELECT without FROM returns exactly one row.
    const [position] = rows;
    if (!position) throw new Error('the feed position query returned no row');
    const { watermark, horizon } = position;
    // Never backwards: a skipped xid of another database can come back into view (a PREPAREd
    // transaction leaves pg_stat_activity), which would only re-deliver changes already indexed.
    const xmin = BigInt(horizon) > BigInt(watermark) ? horizon : watermark;
    // The base time is taken once (MATERIALIZED): as a plain subquery the planner may rescan it
    // for every changed row, and a clock_timestamp() read anew per row made two rows' times
    // collide (seen when one transaction updated hundreds of agents).
    const res = await sql`
      WITH base AS MATERIALIZED (
        SELECT greatest(clock_timestamp(), coalesce(max(feed_at), '-infinity'::timestamptz)) AS t FROM feed_entries WHERE kind = ${kind}),
      changed AS (${CHANGED[kind](watermark, xmin)})
      INSERT INTO feed_entries (kind, entity_id, feed_at, item)
      SELECT ${kind}, c.id, base.t + (row_number() OVER (ORDER BY c.change_txid, c.id)) * interval '1 microsecond', c.item
      FROM changed c CROSS JOIN base
      LEFT JOIN feed_entries f ON f.kind = ${kind} AND f.entity_id = c.id
      WHERE f.item IS DISTINCT FROM c.item
      ON CONFLICT (kind, entity_id) DO UPDATE SET feed_at = excluded.feed_at, item = excluded.item`.execute(trx);
    await trx
      .insertInto('feed_watermarks')
      .values({ kind, watermark: sql<string>`${xmin}::xid8` })
      .onConflict((oc) => oc.column('kind').doUpdateSet((eb) => ({ watermark: eb.ref('excluded.watermark') })))
      .execute();
    return Number(res.numAffectedRows ?? 0);
  });
}
