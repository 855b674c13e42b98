import { sql, type RawBuilder } from 'kysely';
import type { Db, Executor } from './db.js';

/** An agent as its feed entry keeps it (`feed_agent_item`, migration 0015): figures as shown. */
export interface AgentFeedItem {
  handle: string;
  displayName: string | null;
  walletAddress: string;
  tokenId: string | null;
  score: number;
  rawScore: number;
  health: string;
  publishedSkills: number;
  uniqueBuyers90d: number;
  revenueUsdc90d: number;
  /** `removed` once an operator suspended the agent (absent from entries written before). */
  status?: 'active' | 'removed';
  suspension?: { reason: string; at: string; action: string } | null;
}

/** A skill as its feed entry keeps it (`feed_post_item`, migration 0015). */
export interface PostFeedItem {
  id: string;
  title: string;
  preview: string;
  status: string;
  author: { handle: string };
  priceAtomic: string;
  tags: string[];
  oasfSkills: string[];
  oasfDomains: string[];
  version: number;
  publishedAt: string | null;
  /** Absent from entries written before skills were Agent Skills, until the indexer rewrites them. */
  skillName?: string;
  skillDigest?: string | null;
  /** The current version's audit verdict (absent from entries written before audits). */
  audit?: 'pass' | 'warn' | 'fail' | 'pending';
  /** A removed skill's tombstone: why and when (null otherwise). */
  removal?: { reason: string; at: string; action: string } | null;
}

/** A feed entry: its item, its feed time (ISO 8601, UTC, microseconds), and for a ranking its rank. */
export interface FeedRow<T> {
  item: T;
  feed_at: string;
  rank?: number;
}

export interface AgentFeedRowsQuery {
  since: string | null;
  cursor: string | null;
  verified: boolean | null;
  sort: 'updated' | 'top';
  /** Rows to read (a page and one more, to know whether there is more). */
  rows: number;
}

// Raw SQL in this file: feed times compared and printed at microseconds (to_char, timestamptz casts of
// text cursors), JSON members of the items, and a rank window over the score index, which Kysely cannot type.
/** The feed time as text with its microseconds, which a JS Date would drop. */
const FEED_AT = sql`to_char(f.feed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * Agent feed entries after max(since, cursor) (compared in SQL, at microseconds), of verified or
 * unverified agents when `verified` says. `updated`: in feed order. `top`: by the item's score,
 * each with its rank among every agent by that score (ties share one), whatever the filters keep.
 */
export async function readAgentFeedRows(db: Executor, q: AgentFeedRowsQuery): Promise<FeedRow<AgentFeedItem>[]> {
  const after = sql`f.feed_at > coalesce(greatest(${q.since}::timestamptz, ${q.cursor}::timestamptz), '-infinity'::timestamptz)`;
  const verified = sql`(${q.verified}::boolean IS NULL OR (f.item->>'tokenId' IS NOT NULL) = ${q.verified}::boolean)`;
  // An entry without an item is waiting for the indexer to move it. Entries go with their agent;
  // the join only covers an agent deleted while the indexer wrote its entry.
  const { rows } =
    q.sort === 'top'
      ? // Ranked while read off the score index (f.score is the item's), so the top page stops early;
        // the rank counts every agent, whatever the filters keep.
        await sql<FeedRow<AgentFeedItem>>`
          SELECT f.item, ${FEED_AT} AS feed_at, f.rank FROM (
            SELECT f.entity_id, f.item, f.feed_at, f.score, rank() OVER (ORDER BY f.score DESC)::int AS rank
            FROM feed_entries f
            WHERE f.kind = 'agent' AND f.score IS NOT NULL) f
          WHERE ${after} AND ${verified} AND EXISTS (SELECT 1 FROM agents a WHERE a.id = f.entity_id)
          ORDER BY f.score DESC, f.item->>'handle'
          LIMIT ${q.rows}`.execute(db)
      : await sql<FeedRow<AgentFeedItem>>`
          SELECT f.item, ${FEED_AT} AS feed_at
          FROM feed_entries f JOIN agents a ON a.id = f.entity_id
          WHERE f.kind = 'agent' AND f.item IS NOT NULL AND ${after} AND ${verified}
          ORDER BY f.feed_at
          LIMIT ${q.rows}`.execute(db);
  return rows;
}

/**
 * Skill feed entries after max(since, cursor), in feed order, at most `rows`. Drafts never appear;
 * an unpublished skill does, with its status.
 */
export async function readPostFeedRows(
  db: Executor,
  q: { since: string | null; cursor: string | null; rows: number },
): Promise<FeedRow<PostFeedItem>[]> {
  const { rows } = await sql<FeedRow<PostFeedItem>>`
    SELECT f.item, ${FEED_AT} AS feed_at
    FROM feed_entries f JOIN posts p ON p.id = f.entity_id
    WHERE f.kind = 'post' AND f.item IS NOT NULL AND f.item->>'status' <> 'draft'
      AND f.feed_at > coalesce(greatest(${q.since}::timestamptz, ${q.cursor}::timestamptz), '-infinity'::timestamptz)
    ORDER BY f.feed_at LIMIT ${q.rows}`.execute(db);
  return rows;
}

/** The newest feed time of each kind, as text ('' for a kind with no entry yet). */
export async function readLatestFeedTimes(db: Executor): Promise<{ agent: string; post: string }> {
  const { rows } = await sql<{ kind: string; v: string | null }>`
    SELECT k.kind, (SELECT max(feed_at)::text FROM feed_entries f WHERE f.kind = k.kind) AS v
    FROM (VALUES ('agent'), ('post')) k(kind)`.execute(db);
  const latest = (kind: string) => rows.find((r) => r.kind === kind)?.v ?? '';
  return { agent: latest('agent'), post: latest('post') };
}

/**
 * The newest entries of the skill feed that are published skills, newest first: the home page's
 * "newest skills". Read backwards off the feed's order index, so it stops after `limit` rows.
 */
export async function readNewestPublishedPosts(db: Executor, limit: number): Promise<PostFeedItem[]> {
  const { rows } = await sql<{ item: PostFeedItem }>`
    SELECT f.item FROM feed_entries f
    WHERE f.kind = 'post' AND f.item IS NOT NULL AND f.item->>'status' = 'published'
    ORDER BY f.feed_at DESC LIMIT ${limit}`.execute(db);
  return rows.map((r) => r.item);
}

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

export type FeedKind = 'agent' | 'post';

/**
 * The projections that follow change_txid (docs/projections.md), each with its own
 * transaction-scoped advisory lock, so one pass of each runs at a time across processes.
 */
export const PROJECTIONS = {
  agent: 8_004_101,
  post: 8_004_102,
  bazaar: 8_004_103,
  'skill-documents': 8_004_104,
} as const;
export type ProjectionName = keyof typeof PROJECTIONS;

/**
 * A place in a table's changes, in (change_txid, id) order: every change at or before it is
 * projected. `id` NIL_ID stands before every row of its transaction.
 */
export interface ChangePosition {
  txid: string;
  id: string;
}
export const NIL_ID = '00000000-0000-0000-0000-000000000000';
const START: ChangePosition = { txid: '0', id: NIL_ID };

/** The tables a projection reads changes from, each in (change_txid, id) order over its own index. */
export type ChangeSource = 'agents' | 'posts' | 'purchases';

/**
 * The cursors of the projections in projection_watermarks, one per projection and source: the
 * feeds keep the names their rows had.
 */
export type CursorName =
  | 'agent'
  | 'post'
  | 'bazaar'
  | 'bazaar:sales'
  | 'bazaar:sellers'
  | 'skill-documents'
  | 'skill-documents:sales';

/** How many changed rows one batch of a projection takes: a pass is a bounded statement at any size. */
export const CHANGE_BATCH = 2_000;

/**
 * Takes the projection's lock for the transaction and reads the horizon this pass may read up
 * to; undefined when another pass holds the lock. Every transaction below the horizon has ended,
 * so a change below it can no longer appear behind a cursor.
 */
export async function beginProjectionPass(trx: Executor, name: ProjectionName): Promise<string | undefined> {
  // Raw SQL: advisory locks, xid8 and the snapshot functions of `ourHorizon`, which Kysely has no form for.
  const { rows } = await sql<{ ok: boolean; horizon: string }>`
    SELECT pg_try_advisory_xact_lock(${PROJECTIONS[name]}) AS ok, ${ourHorizon}::text AS horizon`.execute(trx);
  // A SELECT without FROM returns exactly one row.
  const [row] = rows;
  if (!row) throw new Error('the projection lock query returned no row');
  return row.ok ? row.horizon : undefined;
}

/** Where a cursor stands; the start before its first pass. */
export async function readCursor(trx: Executor, name: CursorName): Promise<ChangePosition> {
  const row = await trx
    .selectFrom('projection_watermarks')
    .select((eb) => [eb.cast<string>('watermark', 'text').as('txid'), eb.cast<string>('after_id', 'text').as('id')])
    .where('projection', '=', name)
    .executeTakeFirst();
  return row ?? START;
}

const after = (a: ChangePosition, b: ChangePosition) =>
  BigInt(a.txid) > BigInt(b.txid) || (a.txid === b.txid && a.id > b.id);

/**
 * Where a batch leaves its cursor: after its last row when it was full (more may follow), at the
 * horizon when it was not (every change below it is taken). Never backwards: a skipped xid of
 * another database can come back into view (a PREPAREd transaction leaves pg_stat_activity) and
 * lower the horizon, which would only deliver changes already projected again.
 */
export function batchEnd(
  from: ChangePosition,
  horizon: string,
  batch: { taken: number; last: { change_txid: string; id: string } | undefined },
  limit: number,
): { reached: ChangePosition; more: boolean } {
  const more = batch.taken >= limit && batch.last !== undefined;
  const reached =
    more && batch.last ? { txid: batch.last.change_txid, id: batch.last.id } : { txid: horizon, id: NIL_ID };
  return { reached: after(reached, from) ? reached : from, more };
}

/** Moves a cursor; a cursor never moves back. */
export async function saveCursor(trx: Executor, name: CursorName, to: ChangePosition): Promise<void> {
  // Raw SQL: a row comparison of xid8 and uuid, which Kysely's builder does not type.
  await sql`
    INSERT INTO projection_watermarks AS w (projection, watermark, after_id)
    VALUES (${name}, ${to.txid}::xid8, ${to.id}::uuid)
    ON CONFLICT (projection) DO UPDATE SET watermark = excluded.watermark, after_id = excluded.after_id
    WHERE (excluded.watermark, excluded.after_id) > (w.watermark, w.after_id)`.execute(trx);
}

/** The condition that a row of `alias` changed after `from` and before `horizon`. */
export const changedBetween = (alias: string, from: ChangePosition, horizon: string) =>
  sql<boolean>`(${sql.ref(`${alias}.change_txid`)}, ${sql.ref(`${alias}.id`)}) > (${from.txid}::xid8, ${from.id}::uuid)
    AND ${sql.ref(`${alias}.change_txid`)} < ${horizon}::xid8`;

/** One batch of a table's changes after `from`: the rows' ids, and for purchases their skill. */
export async function readChangeBatch(
  trx: Executor,
  source: ChangeSource,
  from: ChangePosition,
  horizon: string,
  limit = CHANGE_BATCH,
): Promise<{ ids: string[]; postIds: string[]; reached: ChangePosition; more: boolean }> {
  // Raw SQL: xid8 row comparisons over the (change_txid, id) indexes.
  const { rows } = await sql<{ id: string; change_txid: string; post_id: string | null }>`
    SELECT c.id, c.change_txid::text AS change_txid, ${source === 'purchases' ? sql`c.post_id` : sql`NULL::uuid`} AS post_id
    FROM ${sql.table(source)} c
    WHERE ${changedBetween('c', from, horizon)}
    ORDER BY c.change_txid, c.id
    LIMIT ${limit}`.execute(trx);
  return {
    ids: rows.map((r) => r.id),
    postIds: [...new Set(rows.flatMap((r) => (r.post_id ? [r.post_id] : [])))],
    ...batchEnd(from, horizon, { taken: rows.length, last: rows[rows.length - 1] }, limit),
  };
}

/**
 * The item each changed entity of one batch would show now (the SQL functions of migration 0015,
 * the one definition of what a feed item shows), read with the entity's change_txid.
 */
const CHANGED: Record<FeedKind, (from: ChangePosition, horizon: string, limit: number) => RawBuilder<unknown>> = {
  agent: (from, horizon, limit) => sql`
    SELECT c.id, c.change_txid, feed_agent_item(c, m) AS item
    FROM agents c LEFT JOIN agent_metrics m ON m.agent_id = c.id
    WHERE ${changedBetween('c', from, horizon)}
    ORDER BY c.change_txid, c.id LIMIT ${limit}`,
  post: (from, horizon, limit) => sql`
    SELECT c.id, c.change_txid, feed_post_item(c, a.handle) AS item
    FROM posts c JOIN agents a ON a.id = c.author_id
    WHERE ${changedBetween('c', from, horizon)}
    ORDER BY c.change_txid, c.id LIMIT ${limit}`,
};

/**
 * Moves committed changes into the feed, for one kind, one batch of at most `limit` changed
 * entities, at most one indexer at a time (a transaction-scoped advisory lock; others skip). Only
 * changes by transactions below `ourHorizon` are taken: every one of those has ended, so none can
 * still appear behind the feed's end. A long transaction holds the cursor back; it never lets the
 * feed skip it. A changed entity whose item differs from the one its entry keeps gets a new
 * feed_at, strictly after every existing one (1 µs apart), so readers can page on it, and the
 * entry keeps the new item: what a place in the feed shows never changes, and every change to
 * what an item shows moves it. A change the item does not show (a bio, a score moving within its
 * hundredth) moves nothing. Returns how many entries were written and whether more changes wait,
 * or null when another indexer holds the lock.
 */
export async function indexFeed(
  db: Db,
  kind: FeedKind,
  limit = CHANGE_BATCH,
): Promise<{ written: number; more: boolean } | null> {
  return db.transaction().execute(async (trx) => {
    const horizon = await beginProjectionPass(trx, kind);
    if (horizon === undefined) return null;
    const from = await readCursor(trx, kind);
    // Raw SQL below: MATERIALIZED CTEs and the row-typed item functions of migration 0015, which
    // Kysely's builder has no form for.
    // The base time is taken once (MATERIALIZED): as a plain subquery the planner may rescan it
    // for every changed row, and a clock_timestamp() read anew per row made two rows' times
    // collide (seen when one transaction updated hundreds of agents).
    const { rows } = await sql<{ taken: number; last_txid: string | null; last_id: string | null; written: number }>`
      WITH base AS MATERIALIZED (
        SELECT greatest(clock_timestamp(), coalesce(max(feed_at), '-infinity'::timestamptz)) AS t FROM feed_entries WHERE kind = ${kind}),
      changed AS MATERIALIZED (${CHANGED[kind](from, horizon, limit)}),
      written AS (
        INSERT INTO feed_entries (kind, entity_id, feed_at, item)
        SELECT ${kind}, c.id, base.t + (row_number() OVER (ORDER BY c.change_txid, c.id)) * interval '1 microsecond', c.item
        FROM changed c CROSS JOIN base
        LEFT JOIN feed_entries f ON f.kind = ${kind} AND f.entity_id = c.id
        WHERE f.item IS DISTINCT FROM c.item
        ON CONFLICT (kind, entity_id) DO UPDATE SET feed_at = excluded.feed_at, item = excluded.item
        RETURNING 1)
      SELECT (SELECT count(*)::int FROM changed) AS taken,
             l.change_txid::text AS last_txid, l.id AS last_id,
             (SELECT count(*)::int FROM written) AS written
      FROM (SELECT 1) one
      LEFT JOIN (SELECT change_txid, id FROM changed ORDER BY change_txid DESC, id DESC LIMIT 1) l ON true`.execute(
      trx,
    );
    const [result] = rows;
    if (!result) throw new Error('the feed batch statement returned no row');
    const last = result.last_txid && result.last_id ? { change_txid: result.last_txid, id: result.last_id } : undefined;
    const end = batchEnd(from, horizon, { taken: result.taken, last }, limit);
    await saveCursor(trx, kind, end.reached);
    return { written: result.written, more: end.more };
  });
}
