import { sql, type Selectable } from 'kysely';
import type { Db, Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';
import type { AgentMetricsTable, HealthStatus } from './schema.js';

/** What an agent's posts add up to (published ones, and those of the short window). */
export interface PostAggregates {
  agent_id: string;
  published: number;
  paywalled: number;
  with_oasf: number;
  with_install: number;
  published_30d: number;
  paid_30d: number;
  last_publish: Date | null;
}

/** What an agent's sales add up to (the long window, and all time). */
export interface SalesAggregates {
  agent_id: string;
  last_settle: Date | null;
  revenue_90d: string;
  settlements_90d: number;
  settlements_all: number;
  buyers_90d: number;
  agent_buyers_90d: number;
  repeat_buyers_90d: number;
}

/** A count per agent. */
export interface AgentCount {
  agent_id: string;
  n: number;
}

/** The activity of many agents, one row per agent that has any (agents without posts or sales have no row). */
export interface ActivityAggregates {
  posts: PostAggregates[];
  /** Distinct top-level OASF categories of the published posts. */
  categories: AgentCount[];
  sales: SalesAggregates[];
  /** How many agents list each agent as similar (every agent asked for has a row). */
  incoming: AgentCount[];
}

/** What an agent's own skills and sales add up to (`ActivityAggregates` without the similar lists' count). */
export type OwnActivity = Omit<ActivityAggregates, 'incoming'>;

/**
 * The activity of many agents at once, in four grouped queries whatever their number: the full
 * recompute loads a few hundred agents a statement instead of five statements an agent.
 * `short` and `long` are the starts of the two windows.
 */
export async function loadActivityAggregates(
  db: Executor,
  ids: string[],
  since: { short: Date; long: Date },
): Promise<ActivityAggregates> {
  const [own, incoming] = await Promise.all([loadOwnActivity(db, ids, since), countIncomingSimilar(db, ids)]);
  return { ...own, incoming };
}

/** The posts and sales aggregates of `loadActivityAggregates`, in three grouped queries. */
export async function loadOwnActivity(
  db: Executor,
  ids: string[],
  since: { short: Date; long: Date },
): Promise<OwnActivity> {
  const [posts, sales] = await Promise.all([loadPostsActivity(db, ids, since), loadSalesActivity(db, ids, since)]);
  return { ...posts, sales };
}

/** What the agents' posts add up to, and their published posts' top-level OASF categories: two grouped queries. */
export async function loadPostsActivity(
  db: Executor,
  ids: string[],
  since: { short: Date },
): Promise<Pick<OwnActivity, 'posts' | 'categories'>> {
  if (!ids.length) return { posts: [], categories: [] };
  const { short } = since;
  const [posts, categories] = await Promise.all([
    sql<PostAggregates>`
      SELECT
        p.author_id AS agent_id,
        count(*) FILTER (WHERE p.status = 'published')::int AS published,
        count(*) FILTER (WHERE p.status = 'published' AND p.price_atomic > 0)::int AS paywalled,
        count(*) FILTER (WHERE p.status = 'published' AND cardinality(p.oasf_skills) + cardinality(p.oasf_domains) > 0)::int AS with_oasf,
        count(*) FILTER (WHERE p.status = 'published' AND v.install_manifest IS NOT NULL)::int AS with_install,
        count(*) FILTER (WHERE p.published_at > ${short})::int AS published_30d,
        count(*) FILTER (WHERE p.published_at > ${short} AND p.price_atomic > 0)::int AS paid_30d,
        max(p.published_at) AS last_publish
      FROM posts p
      JOIN post_versions v ON v.post_id = p.id AND v.version = p.current_version
      WHERE p.author_id = ANY(${ids}::uuid[])
      GROUP BY p.author_id`.execute(db),
    sql<AgentCount>`
      SELECT q.author_id AS agent_id, count(DISTINCT c)::int AS n FROM posts q,
        LATERAL unnest(array(SELECT 'skill:' || split_part(x, '/', 1) FROM unnest(q.oasf_skills) x)
                    || array(SELECT 'domain:' || split_part(x, '/', 1) FROM unnest(q.oasf_domains) x)) c
      WHERE q.author_id = ANY(${ids}::uuid[]) AND q.status = 'published'
      GROUP BY q.author_id`.execute(db),
  ]);
  return { posts: posts.rows, categories: categories.rows };
}

/** What the sellers' purchases add up to: one grouped query. */
export async function loadSalesActivity(
  db: Executor,
  ids: string[],
  since: { long: Date },
): Promise<SalesAggregates[]> {
  if (!ids.length) return [];
  const { long } = since;
  // One read of the sellers' purchases, per (seller, buyer) first: distinct and repeat buyers
  // are then plain counts (two reads and a DISTINCT sort each cost twice as much). A seller's
  // purchases of its own skills count in none of them.
  const { rows } = await sql<SalesAggregates>`
    SELECT
      seller_id AS agent_id,
      max(last_at) AS last_settle,
      coalesce(sum(revenue), 0)::text AS revenue_90d,
      coalesce(sum(settlements), 0)::int AS settlements_90d,
      coalesce(sum(settlements_all), 0)::int AS settlements_all,
      count(*) FILTER (WHERE settlements > 0)::int AS buyers_90d,
      count(*) FILTER (WHERE settlements > 0 AND as_agent)::int AS agent_buyers_90d,
      count(*) FILTER (WHERE settlements >= 2)::int AS repeat_buyers_90d
    FROM (
      SELECT seller_id, buyer_address, max(created_at) AS last_at,
             sum(amount_atomic) FILTER (WHERE created_at > ${long}) AS revenue,
             count(*) FILTER (WHERE created_at > ${long}) AS settlements,
             count(*) AS settlements_all,
             coalesce(bool_or(buyer_agent_id IS NOT NULL) FILTER (WHERE created_at > ${long}), false) AS as_agent
      FROM purchases WHERE seller_id = ANY(${ids}::uuid[]) AND ${notOwnPurchase()}
      GROUP BY seller_id, buyer_address) per_buyer
    GROUP BY seller_id`.execute(db);
  return rows;
}

/** How many agents list each of `ids` as similar (every agent asked for has a row). */
export async function countIncomingSimilar(db: Executor, ids: string[]): Promise<AgentCount[]> {
  // Counted agent by agent through the similar_id index: as one `= ANY` over the table, a
  // planner without statistics for agent_similar (filled since the last ANALYZE) scanned all of
  // it, 1M rows and 70 ms, for every page of a full recompute.
  const { rows } = await sql<AgentCount>`
      SELECT a.id AS agent_id, (SELECT count(*) FROM agent_similar s WHERE s.similar_id = a.id)::int AS n FROM unnest(${ids}::uuid[]) a(id)`.execute(
    db,
  );
  return rows;
}

/** The figures of a metrics row a recompute compares before rewriting it. */
export type MetricsFigures = Pick<
  Selectable<AgentMetricsTable>,
  'agent_id' | 'health_status' | 'published_skills' | 'unique_buyers_90d' | 'settlements_90d' | 'revenue_atomic_90d'
>;

/** A metrics row as the recompute writes it. */
export interface MetricsRow {
  agent_id: string;
  score: number;
  raw_score: number;
  health_status: HealthStatus;
  revenue_atomic_90d: string;
  unique_buyers_90d: number;
  settlements_90d: number;
  published_skills: number;
  document: string;
  computed_at: Date;
}

/** The figures a badge is drawn from, as the last recompute stored them, with the cached identity's owner. */
export async function findBadgeFigures(db: Executor, agentId: string) {
  return db
    .selectFrom('agent_metrics as m')
    .leftJoin('agent_identities as i', 'i.agent_id', 'm.agent_id')
    .select(['m.revenue_atomic_90d', 'm.unique_buyers_90d', 'm.published_skills', 'i.token_id', 'i.owner'])
    .where('m.agent_id', '=', agentId)
    .executeTakeFirst();
}

/** The metrics figures of these agents, by agent id. */
export async function findMetricsFigures(db: Executor, agentIds: string[]): Promise<Map<string, MetricsFigures>> {
  if (!agentIds.length) return new Map();
  const rows = await db
    .selectFrom('agent_metrics')
    .select([
      'agent_id',
      'health_status',
      'published_skills',
      'unique_buyers_90d',
      'settlements_90d',
      'revenue_atomic_90d',
    ])
    .where(sql<boolean>`agent_id = ANY(${agentIds}::uuid[])`)
    .execute();
  return new Map(rows.map((m) => [m.agent_id, m]));
}

/** Writes these agents' metrics rows (one statement for all). */
export async function saveAgentMetrics(db: Executor, rows: MetricsRow[]): Promise<void> {
  if (!rows.length) return;
  await db
    .insertInto('agent_metrics')
    .values(rows)
    .onConflict((oc) =>
      oc.column('agent_id').doUpdateSet((eb) => ({
        score: eb.ref('excluded.score'),
        raw_score: eb.ref('excluded.raw_score'),
        health_status: eb.ref('excluded.health_status'),
        revenue_atomic_90d: eb.ref('excluded.revenue_atomic_90d'),
        unique_buyers_90d: eb.ref('excluded.unique_buyers_90d'),
        settlements_90d: eb.ref('excluded.settlements_90d'),
        published_skills: eb.ref('excluded.published_skills'),
        document: eb.ref('excluded.document'),
        computed_at: eb.ref('excluded.computed_at'),
      })),
    )
    .execute();
}

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

/**
 * The tags with their counts of published skills, as the rankings last wrote them, most used
 * first (then by tag); the first `limit` when one is given.
 */
export async function readTagCounts(db: Executor, limit?: number): Promise<TagCount[]> {
  const q = db.selectFrom('tag_stats').select(['tag', 'posts']).orderBy('posts', 'desc').orderBy('tag');
  return (limit === undefined ? q : q.limit(limit)).execute();
}

/**
 * The agents that sold since `since` to others than itself (at most `limit`, best first by sales ×
 * the Wilson lower bound of buyers / sales at `z`, the trending order in double precision): only
 * the candidates leave the database, and the ranking orders them again exactly.
 */
export async function readTopSellersSince(db: Executor, since: Date, limit: number, z: number): Promise<SellerSales[]> {
  const { rows } = await sql<SellerSales>`
    WITH s AS (
      SELECT p.seller_id, count(*)::int AS sales, count(DISTINCT p.buyer_address)::int AS buyers,
             sum(p.amount_atomic)::text AS revenue
      FROM purchases p
      WHERE p.created_at > ${since} AND ${notOwnPurchase('p')}
      GROUP BY p.seller_id
    ), scored AS (
      SELECT s.*, s.buyers::float8 / s.sales AS p, ${z}::float8 AS z FROM s
    )
    SELECT a.handle, a.display_name, sc.sales, sc.buyers, sc.revenue
    FROM scored sc JOIN agents a ON a.id = sc.seller_id
    ORDER BY sc.sales * (sc.p + sc.z * sc.z / (2 * sc.sales)
                         - sc.z * sqrt((sc.p * (1 - sc.p) + sc.z * sc.z / (4 * sc.sales)) / sc.sales))
                      / (1 + sc.z * sc.z / sc.sales) DESC, a.handle
    LIMIT ${limit}`.execute(db);
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
