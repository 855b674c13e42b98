import { sql } from 'kysely';
import type { Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';

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
  const { short, long } = since;
  const [posts, categories, sales, incoming] = await Promise.all([
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
    // One read of the sellers' purchases, per (seller, buyer) first: distinct and repeat buyers
    // are then plain counts (two reads and a DISTINCT sort each cost twice as much). A seller's
    // purchases of its own skills count in none of them.
    sql<SalesAggregates>`
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
      GROUP BY seller_id`.execute(db),
    // Counted agent by agent through the similar_id index: as one `= ANY` over the table, a
    // planner without statistics for agent_similar (filled since the last ANALYZE) scanned all of
    // it, 1M rows and 70 ms, for every page of a full recompute.
    sql<AgentCount>`
      SELECT a.id AS agent_id, (SELECT count(*) FROM agent_similar s WHERE s.similar_id = a.id)::int AS n FROM unnest(${ids}::uuid[]) a(id)`.execute(
      db,
    ),
  ]);
  return { posts: posts.rows, categories: categories.rows, sales: sales.rows, incoming: incoming.rows };
}

/** The metrics percentile components rank against, each over the agents where it is non-zero. */
export const POPULATION_METRICS = ['uniqueBuyers', 'settlements', 'paidSkills', 'incomingSimilar'] as const;
export type PopulationMetric = (typeof POPULATION_METRICS)[number];

/** Every stored set of breakpoints (population metrics and other statistics), by name. */
export function loadPopulationStats(db: Executor) {
  return db.selectFrom('population_stats').select(['name', 'breakpoints']).execute();
}

/** Rewrites every agent's rank by score (only the ranks that changed); returns how many changed. */
export async function updateScoreRanks(db: Executor): Promise<number> {
  const ranked = await sql`
    UPDATE agent_metrics m SET rank = r.rank
    FROM (SELECT agent_id, rank() OVER (ORDER BY score DESC)::int AS rank FROM agent_metrics) r
    WHERE m.agent_id = r.agent_id AND m.rank IS DISTINCT FROM r.rank`.execute(db);
  return Number(ranked.numAffectedRows ?? 0);
}

/**
 * Where a population metric's per-agent values come from (`since`: start of the long window); as
 * in each agent's own figures, a seller's purchases of its own skills are not sales.
 */
function metricValues(name: PopulationMetric, since: Date) {
  const queries: Record<PopulationMetric, ReturnType<typeof sql<{ v: number }>>> = {
    uniqueBuyers: sql`SELECT count(DISTINCT buyer_address)::float8 AS v FROM purchases WHERE created_at > ${since} AND ${notOwnPurchase()} GROUP BY seller_id`,
    settlements: sql`SELECT count(*)::float8 AS v FROM purchases WHERE created_at > ${since} AND ${notOwnPurchase()} GROUP BY seller_id`,
    paidSkills: sql`SELECT count(*)::float8 AS v FROM posts WHERE status = 'published' AND price_atomic > 0 GROUP BY author_id`,
    incomingSimilar: sql`SELECT count(*)::float8 AS v FROM agent_similar GROUP BY similar_id`,
  };
  return queries[name];
}

/** The quantiles at `fractions` of a metric's non-zero values, and how many agents have one. */
export async function measurePopulationQuantiles(
  db: Executor,
  name: PopulationMetric,
  since: Date,
  fractions: number[],
): Promise<{ breakpoints: number[] | null; n: number }> {
  const { rows } = await sql<{ breakpoints: number[] | null; n: number }>`
    SELECT percentile_disc(${fractions}::float8[]) WITHIN GROUP (ORDER BY v) AS breakpoints, count(*)::int AS n
    FROM (${metricValues(name, since)}) m WHERE v > 0`.execute(db);
  // An aggregate without GROUP BY always answers one row.
  return rows[0] ?? { breakpoints: null, n: 0 };
}

/** Every non-zero value of a metric, ascending. */
export async function loadPopulationValues(db: Executor, name: PopulationMetric, since: Date): Promise<number[]> {
  const { rows } = await sql<{
    v: number;
  }>`SELECT v FROM (${metricValues(name, since)}) m WHERE v > 0 ORDER BY v`.execute(db);
  return rows.map((r) => r.v);
}

/** Stores a metric's breakpoints and population size. */
export async function savePopulationStat(
  db: Executor,
  stat: { name: string; breakpoints: number[]; population: number; computedAt: Date },
): Promise<void> {
  const set = { breakpoints: stat.breakpoints, population: stat.population, computed_at: stat.computedAt };
  await db
    .insertInto('population_stats')
    .values({ name: stat.name, ...set })
    .onConflict((oc) => oc.column('name').doUpdateSet(set))
    .execute();
}
