import { sql } from 'kysely';
import type { Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';

// The search tier's table (`search_tier_posts`): its rebuild beside the live table, the swap, and
// one skill's place kept current. What the tier is for: src/domain/discovery/search-tier.ts.

/** Makes concurrent rebuilds of the tier take turns, until the transaction ends. */
export async function lockSearchTierRebuild(trx: Executor): Promise<void> {
  // A bare function call, which reads plainer as SQL.
  await sql`SELECT pg_advisory_xact_lock(hashtext('search_tier_posts'))`.execute(trx);
}

/** Whether at least `n` skills are published: reads at most `n` rows, whatever the catalogue's size. */
export async function atLeastPublishedSkills(db: Executor, n: number): Promise<boolean> {
  const { rows } = await sql<{ found: number }>`
    SELECT count(*)::int AS found FROM (SELECT 1 FROM posts WHERE status = 'published' LIMIT ${n}) AS p`.execute(db);
  return (rows[0]?.found ?? 0) >= n;
}

/** Empties the tier. */
export async function clearSearchTier(db: Executor): Promise<void> {
  await db.deleteFrom('search_tier_posts').execute();
}

/** Every transaction still running when this is read has an id at least this (an xid8, as text). */
export async function readOldestRunningTransaction(trx: Executor): Promise<string> {
  // Raw SQL: snapshot functions and xid8, which Kysely's builder has no form for.
  const { rows } = await sql<{ since: string }>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS since`.execute(
    trx,
  );
  const since = rows[0]?.since;
  if (since === undefined) throw new Error('pg_current_snapshot() returned no row');
  return since;
}

/**
 * Writes the next tier beside the live one (`search_tier_posts_next`, with its key, its GIN index
 * without a pending list, and statistics): the skills published after `recentSince`, then those
 * with the most paid sales after `salesSince` (a seller's own purchases are no sales), then the newest, up to `size`. Written best first,
 * so its rows lie in that order: searches read the tier's first matches in table order and so get
 * its best ones (TIER_WINDOW above). Returns the skills written.
 */
export async function writeNextSearchTier(
  trx: Executor,
  opts: { size: number; recentSince: Date; salesSince: Date },
): Promise<number> {
  // Raw SQL: the tier is built as a new table and swapped in (DDL, ANALYZE), beyond Kysely's builder.
  await sql`CREATE TABLE search_tier_posts_next (post_id uuid NOT NULL, search tsvector NOT NULL)`.execute(trx);
  const res = await sql`
    INSERT INTO search_tier_posts_next (post_id, search)
    SELECT p.id, p.search FROM posts p
    LEFT JOIN (SELECT post_id, count(*) AS sales FROM purchases WHERE created_at > ${opts.salesSince} AND ${notOwnPurchase()} GROUP BY post_id) s ON s.post_id = p.id
    WHERE p.status = 'published' AND p.search IS NOT NULL
    ORDER BY (p.published_at > ${opts.recentSince}) DESC, coalesce(s.sales, 0) DESC, p.published_at DESC, p.id
    LIMIT ${opts.size}`.execute(trx);
  await sql`ALTER TABLE search_tier_posts_next ADD CONSTRAINT search_tier_posts_next_pkey PRIMARY KEY (post_id)`.execute(
    trx,
  );
  await sql`CREATE INDEX search_tier_posts_next_search_idx ON search_tier_posts_next USING gin (search) WITH (fastupdate = off)`.execute(
    trx,
  );
  await sql`ANALYZE search_tier_posts_next`.execute(trx);
  return Number(res.numAffectedRows ?? 0);
}

/**
 * Replaces the live tier by the next one, keeping the names of its key and index. From here to
 * the commit, searches and publishes wait (milliseconds); waiting longer than `lockTimeoutMs` for
 * searches still reading the old table fails with lock_not_available (55P03).
 */
export async function swapInNextSearchTier(trx: Executor, lockTimeoutMs: number): Promise<void> {
  // Raw SQL: SET LOCAL and the swap's DDL.
  await sql`SET LOCAL lock_timeout = ${sql.lit(`${lockTimeoutMs}ms`)}`.execute(trx);
  await sql`DROP TABLE search_tier_posts`.execute(trx);
  await sql`ALTER TABLE search_tier_posts_next RENAME TO search_tier_posts`.execute(trx);
  await sql`ALTER INDEX search_tier_posts_next_pkey RENAME TO search_tier_posts_pkey`.execute(trx);
  await sql`ALTER INDEX search_tier_posts_next_search_idx RENAME TO search_tier_posts_search_idx`.execute(trx);
}

/**
 * Which skills to bring up to date in the tier: those changed by a transaction at or after an
 * xid8 (`since`), or one skill (`postId`), which joins only a tier that is not empty.
 */
type TierChange = { since: string } | { postId: string };

/** An unpublished skill of `change` leaves the tier; a published one joins it or takes its current vector. */
async function recopyIntoSearchTier(db: Executor, change: TierChange): Promise<void> {
  const changed = 'since' in change ? sql<string>`${change.since}::xid8` : undefined;
  const postId = 'postId' in change ? change.postId : '';
  await db
    .deleteFrom('search_tier_posts as t')
    .using('posts as p')
    .whereRef('p.id', '=', 't.post_id')
    .where('p.status', '<>', sql.lit('published'))
    .$call((q) => (changed ? q.where('p.change_txid', '>=', changed) : q.where('t.post_id', '=', postId)))
    .execute();
  await db
    .insertInto('search_tier_posts')
    .columns(['post_id', 'search'])
    .expression((eb) =>
      eb
        .selectFrom('posts as p')
        .select(['p.id as post_id', 'p.search'])
        .where('p.status', '=', sql.lit('published'))
        .where('p.search', 'is not', null)
        .$call((q) =>
          changed
            ? q.where('p.change_txid', '>=', changed)
            : q
                .where('p.id', '=', postId)
                .where((w) => w.exists(w.selectFrom('search_tier_posts').select(w.lit(1).as('one')))),
        )
        .$narrowType<{ search: string }>(),
    )
    .onConflict((oc) => oc.column('post_id').doUpdateSet((eb) => ({ search: eb.ref('excluded.search') })))
    .execute();
}

/**
 * Brings the tier's copy of every skill changed by a transaction `since` or later up to date: an
 * unpublished one leaves, a published one joins or takes its current vector.
 */
export function recopyChangedSkillsIntoSearchTier(trx: Executor, since: string): Promise<void> {
  return recopyIntoSearchTier(trx, { since });
}

/**
 * Brings one skill's place in the tier up to date: unpublished, it leaves; published, it joins (or
 * takes its current vector), unless the tier is empty.
 */
export function writeSearchTierEntry(db: Executor, postId: string): Promise<void> {
  return recopyIntoSearchTier(db, { postId });
}
