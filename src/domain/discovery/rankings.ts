import { refreshSearchVocabulary } from './search.js';
import { refreshSearchTier } from './search-tier.js';
import { sql } from 'kysely';
import type { Db } from '../../data/db.js';
import { wilsonLower } from '../scoring/score.js';
import { WILSON_Z } from '../scoring/methodology.js';

export const TRENDING_WINDOW_HOURS = 72;
export const TAG_WINDOW_DAYS = 7;
/** Tag trend weights: a paid purchase says more about demand than a new (free to read) listing. */
export const TAG_WEIGHTS = { paidPurchase: 3, published: 1 } as const;

/**
 * Trending agents: sales velocity over the last 72 hours (sales per hour) weighted by the Wilson
 * lower bound (z = 1.96) of buyer diversity (distinct buyers / sales), so one wallet buying a
 * hundred times does not trend. trend = (sales72h / 72) x wilson(buyers72h, sales72h).
 */
async function trending(db: Db, now: Date) {
  const since = new Date(now.getTime() - TRENDING_WINDOW_HOURS * 3_600_000);
  const { rows } = await sql<{
    handle: string;
    display_name: string | null;
    sales: number;
    buyers: number;
    revenue: string;
  }>`
    SELECT a.handle, a.display_name, count(*)::int AS sales, count(DISTINCT p.buyer_address)::int AS buyers, sum(p.amount_atomic)::text AS revenue
    FROM purchases p JOIN agents a ON a.id = p.seller_id
    WHERE p.created_at > ${since}
    GROUP BY a.id, a.handle, a.display_name`.execute(db);
  return rows
    .map((r) => {
      const velocity = r.sales / TRENDING_WINDOW_HOURS;
      const diversity = wilsonLower(r.buyers, r.sales);
      return {
        handle: r.handle,
        displayName: r.display_name,
        sales72h: r.sales,
        buyers72h: r.buyers,
        revenueUsdc72h: Number(r.revenue) / 1e6,
        velocityPerHour: velocity,
        buyerDiversity: diversity,
        trendScore: velocity * diversity,
      };
    })
    .sort((a, b) => b.trendScore - a.trendScore || a.handle.localeCompare(b.handle))
    .slice(0, 100)
    .map((x, i) => ({ rank: i + 1, ...x }));
}

/** Tag counts and their 7-day trend: 3 per paid purchase of a skill with the tag, 1 per new listing. */
async function tags(db: Db, now: Date) {
  const since = new Date(now.getTime() - TAG_WINDOW_DAYS * 86_400_000);
  await db.transaction().execute(async (trx) => {
    await sql`TRUNCATE tag_stats`.execute(trx);
    await sql`
      INSERT INTO tag_stats (tag, posts, score_7d)
      SELECT tag, sum(posts)::int, sum(score) FROM (
        SELECT t AS tag, count(*) AS posts,
               ${TAG_WEIGHTS.published} * count(*) FILTER (WHERE published_at > ${since}) AS score
        FROM posts, unnest(tags) t WHERE status = 'published' GROUP BY t
        UNION ALL
        SELECT t, 0, ${TAG_WEIGHTS.paidPurchase} * count(*)
        FROM purchases pu JOIN posts p ON p.id = pu.post_id, unnest(p.tags) t
        WHERE pu.created_at > ${since} AND pu.amount_atomic > 0 GROUP BY t
      ) x GROUP BY tag`.execute(trx);
  });
  return db
    .selectFrom('tag_stats')
    .selectAll()
    .where('score_7d', '>', 0)
    .orderBy('score_7d', 'desc')
    .orderBy('tag')
    .limit(100)
    .execute();
}

/**
 * Published skills and agents per OASF category, counted at every level of the path (a skill in
 * a/b/c counts for a, a/b and a/b/c), and the 5 most used tags of each tagged category (what
 * depth 4 of the categories document shows under the deepest categories).
 */
async function categories(db: Db) {
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
  const top = await sql<{ family: string; path: string; tag: string; n: number }>`
    SELECT family, path, tag, n FROM (
      SELECT family, path, tag, count(*)::int AS n, row_number() OVER (PARTITION BY family, path ORDER BY count(*) DESC, tag) AS r
      FROM (
        SELECT 'skills' AS family, x AS path, t AS tag FROM posts, unnest(oasf_skills) x, unnest(tags) t WHERE status = 'published'
        UNION ALL SELECT 'domains', x, t FROM posts, unnest(oasf_domains) x, unnest(tags) t WHERE status = 'published'
      ) pairs GROUP BY family, path, tag) ranked
    WHERE r <= 5`.execute(db);
  const counts: Record<string, Record<string, { posts: number; agents: number }>> = { skills: {}, domains: {} };
  for (const r of rows) counts[r.family]![r.prefix] = { posts: r.posts, agents: r.agents };
  const topTags: Record<string, Record<string, Array<{ tag: string; posts: number }>>> = { skills: {}, domains: {} };
  for (const r of top.rows) (topTags[r.family]![r.path] ??= []).push({ tag: r.tag, posts: r.n });
  return { counts, topTags };
}

export type CategoryCountsDoc = Awaited<ReturnType<typeof categories>>;

async function save(db: Db, name: string, document: unknown, now: Date) {
  const doc = JSON.stringify(document);
  await db
    .insertInto('discovery_snapshots')
    .values({ name, document: doc, computed_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ document: doc, computed_at: now }))
    .execute();
}

/** Recomputes the discovery rankings (trending agents, tags, category counts) into snapshots. */
export async function computeRankings(db: Db, now = new Date()) {
  const [trend, tagTop, cats] = [await trending(db, now), await tags(db, now), await categories(db)];
  await save(db, 'trending', { windowHours: TRENDING_WINDOW_HOURS, wilsonZ: WILSON_Z, agents: trend }, now);
  await save(
    db,
    'tags',
    {
      windowDays: TAG_WINDOW_DAYS,
      weights: TAG_WEIGHTS,
      tags: tagTop.map((t) => ({ tag: t.tag, posts: t.posts, score7d: t.score_7d })),
    },
    now,
  );
  await save(db, 'categories', cats, now);
  const vocabulary = await refreshSearchVocabulary(db);
  const searchTier = await refreshSearchTier(db, { now });
  return { trending: trend.length, tags: tagTop.length, vocabulary, searchTier };
}

export async function snapshot<T>(db: Db, name: string): Promise<{ document: T; computedAt: string } | undefined> {
  const row = await db
    .selectFrom('discovery_snapshots')
    .select(['document', 'computed_at'])
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? { document: row.document as T, computedAt: row.computed_at.toISOString() } : undefined;
}
