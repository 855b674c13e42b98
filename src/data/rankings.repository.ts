import { sql } from 'kysely';
import type { Db, Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';

/** A tag and how many published skills carry it. */
export interface TagCount {
  tag: string;
  posts: number;
}

/** A seller's paid and free purchases in a window, its purchases of its own skills left out. */
export interface SellerSales {
  handle: string;
  display_name: string | null;
  sales: number;
  buyers: number;
  /** Sum of the amounts, in atomic units, as text (it can pass 2^53). */
  revenue: string;
}

/** Every tag with its count of published skills, as the rankings last wrote them. */
export async function readTagCounts(db: Executor): Promise<TagCount[]> {
  return db.selectFrom('tag_stats').select(['tag', 'posts']).execute();
}

/** Every agent that sold since `since` to others than itself: its purchases, distinct buyers and revenue. */
export async function readSalesSince(db: Executor, since: Date): Promise<SellerSales[]> {
  const { rows } = await sql<SellerSales>`
    SELECT a.handle, a.display_name, count(*)::int AS sales, count(DISTINCT p.buyer_address)::int AS buyers, sum(p.amount_atomic)::text AS revenue
    FROM purchases p JOIN agents a ON a.id = p.seller_id
    WHERE p.created_at > ${since} AND ${notOwnPurchase('p')}
    GROUP BY a.id, a.handle, a.display_name`.execute(db);
  return rows;
}

/**
 * Rewrites `tag_stats` in one transaction of its own: every tag of a published skill with its
 * skill count, and its trend since `since`: `weights.published` per skill with the tag published
 * since then, `weights.paidPurchase` per paid purchase of a skill with the tag (but its seller's own).
 */
export async function refreshTagStats(
  db: Db,
  since: Date,
  weights: { paidPurchase: number; published: number },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`TRUNCATE tag_stats`.execute(trx);
    await sql`
      INSERT INTO tag_stats (tag, posts, score_7d)
      SELECT tag, sum(posts)::int, sum(score) FROM (
        SELECT t AS tag, count(*) AS posts,
               ${weights.published} * count(*) FILTER (WHERE published_at > ${since}) AS score
        FROM posts, unnest(tags) t WHERE status = 'published' GROUP BY t
        UNION ALL
        SELECT t, 0, ${weights.paidPurchase} * count(*)
        FROM purchases pu JOIN posts p ON p.id = pu.post_id, unnest(p.tags) t
        WHERE pu.created_at > ${since} AND pu.amount_atomic > 0 AND ${notOwnPurchase('pu')} GROUP BY t
      ) x GROUP BY tag`.execute(trx);
  });
}

/** The tags with a positive trend score, highest first (then by tag), at most `limit`. */
export async function readTrendingTags(db: Executor, limit: number) {
  return db
    .selectFrom('tag_stats')
    .selectAll()
    .where('score_7d', '>', 0)
    .orderBy('score_7d', 'desc')
    .orderBy('tag')
    .limit(limit)
    .execute();
}

/**
 * Published skills and agents per OASF category, counted at every level of the path (a skill in
 * a/b/c counts for a, a/b and a/b/c); `family` is `skills` or `domains`.
 */
export async function readCategoryCounts(db: Executor) {
  const { rows } = await sql<{ family: string; prefix: string; posts: number; agents: number }>`
    WITH tagged AS (
      SELECT 'skills' AS family, p.id AS post_id, p.author_id AS agent_id, x AS path FROM posts p, unnest(p.oasf_skills) x WHERE p.status = 'published'
      UNION ALL SELECT 'domains', p.id, p.author_id, x FROM posts p, unnest(p.oasf_domains) x WHERE p.status = 'published'
      UNION ALL SELECT 'skills', NULL, a.id, x FROM agents a, unnest(a.oasf_skills) x
      UNION ALL SELECT 'domains', NULL, a.id, x FROM agents a, unnest(a.oasf_domains) x)
    SELECT family, array_to_string((string_to_array(path, '/'))[1:n], '/') AS prefix,
           count(DISTINCT post_id)::int AS posts, count(DISTINCT agent_id)::int AS agents
    FROM tagged, generate_series(1, cardinality(string_to_array(path, '/'))) n
    GROUP BY 1, 2`.execute(db);
  return rows;
}

/** The 5 tags most used by the published skills of each category (exactly that path), with their counts. */
export async function readCategoryTopTags(db: Executor) {
  const { rows } = await sql<{ family: string; path: string; tag: string; n: number }>`
    SELECT family, path, tag, n FROM (
      SELECT family, path, tag, count(*)::int AS n, row_number() OVER (PARTITION BY family, path ORDER BY count(*) DESC, tag) AS r
      FROM (
        SELECT 'skills' AS family, x AS path, t AS tag FROM posts, unnest(oasf_skills) x, unnest(tags) t WHERE status = 'published'
        UNION ALL SELECT 'domains', x, t FROM posts, unnest(oasf_domains) x, unnest(tags) t WHERE status = 'published'
      ) pairs GROUP BY family, path, tag) ranked
    WHERE r <= 5`.execute(db);
  return rows;
}

/** Writes (or replaces) the snapshot `name` of a discovery document. */
export async function saveSnapshot(db: Executor, name: string, document: unknown, computedAt: Date): Promise<void> {
  const doc = JSON.stringify(document);
  await db
    .insertInto('discovery_snapshots')
    .values({ name, document: doc, computed_at: computedAt })
    .onConflict((oc) => oc.column('name').doUpdateSet({ document: doc, computed_at: computedAt }))
    .execute();
}

/** The snapshot `name` as stored, or undefined before the first `saveSnapshot`. */
export async function readSnapshot(
  db: Executor,
  name: string,
): Promise<{ document: Record<string, unknown>; computedAt: Date } | undefined> {
  const row = await db
    .selectFrom('discovery_snapshots')
    .select(['document', 'computed_at'])
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? { document: row.document, computedAt: row.computed_at } : undefined;
}
