import { sql } from 'kysely';
import type { Db } from '../../data/db.js';

/**
 * The search tier (`search_tier_posts`): the search vectors of the skills a search should find
 * first, with their own GIN index. Intersecting two common words over a million skills reads two
 * posting lists of tens of thousands of entries (4-5 ms of PostgreSQL CPU a search); over the
 * tier, a tenth of that. A search ranks the tier's matches when they are enough to fill its page
 * and goes to the full index only when they are not, which is then cheap, as the words are rare
 * (docs/discovery.md, decision 0008).
 */
export const SEARCH_TIER = {
  /** Skills the tier holds. */
  size: 100_000,
  /** Below this many published skills the full index is cheap enough and the tier stays empty. */
  minimumPublished: 200_000,
  /** Skills published this recently come first, so new listings are found by their common words too. */
  recentDays: 7,
  /** Then the skills with the most paid sales over this window. */
  salesDays: 90,
} as const;

/**
 * Rebuilds the tier: the skills published in the last 7 days, then those with the most paid sales
 * in 90 days, then the newest, up to `size`. Built beside the live table (searches go on with the
 * old tier) and swapped in at the end of one transaction, under an advisory lock so two rebuilds
 * never interleave. Skills published, edited or unpublished while it was being built are copied
 * again after the swap, found by their `change_txid`. The swap waits at most `SWAP_LOCK_TIMEOUT_MS`
 * for searches holding the old table; if that runs out, the old tier is kept (returns null) and the
 * next rebuild tries again. Empties the tier when the marketplace is below `minimumPublished`.
 */
export async function refreshSearchTier(
  db: Db,
  opts: { size?: number; minimumPublished?: number; now?: Date } = {},
): Promise<number | null> {
  const size = opts.size ?? SEARCH_TIER.size;
  const minimum = opts.minimumPublished ?? SEARCH_TIER.minimumPublished;
  const now = opts.now ?? new Date();
  try {
    return await db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtext('search_tier_posts'))`.execute(trx);
      const published = Number(
        (await sql<{ n: string }>`SELECT count(*) AS n FROM posts WHERE status = 'published'`.execute(trx)).rows[0]!.n,
      );
      if (published < minimum) {
        await sql`DELETE FROM search_tier_posts`.execute(trx);
        return 0;
      }
      // Every transaction still running when the copy below starts has an id at least this.
      const { since } = (
        await sql<{ since: string }>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS since`.execute(trx)
      ).rows[0]!;
      const recent = new Date(now.getTime() - SEARCH_TIER.recentDays * 86_400_000);
      const sales = new Date(now.getTime() - SEARCH_TIER.salesDays * 86_400_000);
      // Written best first into a new table, so its rows lie in that order: searches read the tier's
      // first matches in table order and so get its best ones (TIER_WINDOW in search.ts).
      await sql`CREATE TABLE search_tier_posts_next (post_id uuid NOT NULL, search tsvector NOT NULL)`.execute(trx);
      const res = await sql`
        INSERT INTO search_tier_posts_next (post_id, search)
        SELECT p.id, p.search FROM posts p
        LEFT JOIN (SELECT post_id, count(*) AS sales FROM purchases WHERE created_at > ${sales} GROUP BY post_id) s ON s.post_id = p.id
        WHERE p.status = 'published' AND p.search IS NOT NULL
        ORDER BY (p.published_at > ${recent}) DESC, coalesce(s.sales, 0) DESC, p.published_at DESC, p.id
        LIMIT ${size}`.execute(trx);
      await sql`ALTER TABLE search_tier_posts_next ADD CONSTRAINT search_tier_posts_next_pkey PRIMARY KEY (post_id)`.execute(
        trx,
      );
      await sql`CREATE INDEX search_tier_posts_next_search_idx ON search_tier_posts_next USING gin (search) WITH (fastupdate = off)`.execute(
        trx,
      );
      await sql`ANALYZE search_tier_posts_next`.execute(trx);
      // The swap: from here to the commit, searches and publishes wait (milliseconds).
      await sql`SET LOCAL lock_timeout = ${sql.lit(`${SWAP_LOCK_TIMEOUT_MS}ms`)}`.execute(trx);
      await sql`DROP TABLE search_tier_posts`.execute(trx);
      await sql`ALTER TABLE search_tier_posts_next RENAME TO search_tier_posts`.execute(trx);
      await sql`ALTER INDEX search_tier_posts_next_pkey RENAME TO search_tier_posts_pkey`.execute(trx);
      await sql`ALTER INDEX search_tier_posts_next_search_idx RENAME TO search_tier_posts_search_idx`.execute(trx);
      // What changed meanwhile went into the old table, or was not committed when the copy read.
      await sql`
        DELETE FROM search_tier_posts t USING posts p
        WHERE p.id = t.post_id AND p.change_txid >= ${since}::xid8 AND p.status <> 'published'`.execute(trx);
      await sql`
        INSERT INTO search_tier_posts (post_id, search)
        SELECT p.id, p.search FROM posts p
        WHERE p.change_txid >= ${since}::xid8 AND p.status = 'published' AND p.search IS NOT NULL
        ON CONFLICT (post_id) DO UPDATE SET search = excluded.search`.execute(trx);
      return Number(res.numAffectedRows ?? 0);
    });
  } catch (err) {
    if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) return null;
    throw err;
  }
}

/** How long the swap waits for searches still reading the old tier before giving up for this round. */
const SWAP_LOCK_TIMEOUT_MS = 2000;
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Keeps one skill's place in the tier current, in the transaction that changed it: a skill just
 * published or edited joins it (with its current vector), so it is found by its common words before
 * the next rebuild; an unpublished one leaves it. Nothing joins while the tier is empty. The tier is
 * part of the search index: like the GIN index on posts, a failure here fails the change.
 */
export async function syncSearchTier(db: Db, postId: string): Promise<void> {
  await sql`
    DELETE FROM search_tier_posts t USING posts p
    WHERE t.post_id = ${postId} AND p.id = t.post_id AND p.status <> 'published'`.execute(db);
  await sql`
    INSERT INTO search_tier_posts (post_id, search)
    SELECT p.id, p.search FROM posts p
    WHERE p.id = ${postId} AND p.status = 'published' AND p.search IS NOT NULL AND EXISTS (SELECT 1 FROM search_tier_posts)
    ON CONFLICT (post_id) DO UPDATE SET search = excluded.search`.execute(db);
}
