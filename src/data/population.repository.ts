import { sql } from 'kysely';
import type { Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';

/*
 * The population statistics: the per-agent values the score's percentile components rank against,
 * their quantiles over the marketplace, and the stored breakpoints (`population_stats`).
 */

/** The metrics percentile components rank against, each over the agents where it is non-zero. */
export const POPULATION_METRICS = ['uniqueBuyers', 'settlements', 'paidSkills', 'incomingSimilar'] as const;
export type PopulationMetric = (typeof POPULATION_METRICS)[number];

/** Every stored set of breakpoints (population metrics and other statistics), by name. */
export function loadPopulationStats(db: Executor) {
  return db.selectFrom('population_stats').select(['name', 'breakpoints']).execute();
}

/**
 * Each seller's distinct buyer wallets and sales since `since` (the start of the long window); as
 * in each agent's own figures, a seller's purchases of its own skills are not sales.
 */
const salesPerSeller = (since: Date) =>
  sql<{
    buyers: number;
    sales: number;
  }>`SELECT count(DISTINCT buyer_address)::float8 AS buyers, count(*)::float8 AS sales FROM purchases WHERE created_at > ${since} AND ${notOwnPurchase()} GROUP BY seller_id`;

/** Where a population metric's per-agent values come from (`since`: start of the long window). */
function metricValues(name: PopulationMetric, since: Date) {
  const queries: Record<PopulationMetric, ReturnType<typeof sql<{ v: number }>>> = {
    uniqueBuyers: sql`SELECT buyers AS v FROM (${salesPerSeller(since)}) s`,
    settlements: sql`SELECT sales AS v FROM (${salesPerSeller(since)}) s`,
    paidSkills: sql`SELECT count(*)::float8 AS v FROM posts WHERE status = 'published' AND price_atomic > 0 GROUP BY author_id`,
    incomingSimilar: sql`SELECT count(*)::float8 AS v FROM agent_similar GROUP BY similar_id`,
  };
  return queries[name];
}

/** A metric's quantiles at the fractions asked (null when no agent has a non-zero value), and how many agents have one. */
export interface MeasuredQuantiles {
  breakpoints: number[] | null;
  n: number;
}

/** The quantiles at `fractions` of a metric's non-zero values, and how many agents have one. */
export async function measurePopulationQuantiles(
  db: Executor,
  name: PopulationMetric,
  since: Date,
  fractions: number[],
): Promise<MeasuredQuantiles> {
  const { rows } = await sql<MeasuredQuantiles>`
    SELECT percentile_disc(${fractions}::float8[]) WITHIN GROUP (ORDER BY v) AS breakpoints, count(*)::int AS n
    FROM (${metricValues(name, since)}) m WHERE v > 0`.execute(db);
  // An aggregate without GROUP BY always answers one row.
  return rows[0] ?? { breakpoints: null, n: 0 };
}

/**
 * `measurePopulationQuantiles` of both sales metrics (distinct buyers, sales) from one read of the
 * long window's purchases: read once a metric, the two took 6.3-6.7 s at 5M purchases; so, 3.7-4.6 s.
 */
export async function measureSalesQuantiles(
  db: Executor,
  since: Date,
  fractions: number[],
): Promise<Record<'uniqueBuyers' | 'settlements', MeasuredQuantiles>> {
  const { rows } = await sql<{ buyers: number[] | null; buyers_n: number; sales: number[] | null; sales_n: number }>`
    WITH s AS MATERIALIZED (${salesPerSeller(since)})
    SELECT
      (SELECT percentile_disc(${fractions}::float8[]) WITHIN GROUP (ORDER BY buyers) FROM s WHERE buyers > 0) AS buyers,
      (SELECT count(*)::int FROM s WHERE buyers > 0) AS buyers_n,
      (SELECT percentile_disc(${fractions}::float8[]) WITHIN GROUP (ORDER BY sales) FROM s WHERE sales > 0) AS sales,
      (SELECT count(*)::int FROM s WHERE sales > 0) AS sales_n`.execute(db);
  const r = rows[0];
  return {
    uniqueBuyers: { breakpoints: r?.buyers ?? null, n: r?.buyers_n ?? 0 },
    settlements: { breakpoints: r?.sales ?? null, n: r?.sales_n ?? 0 },
  };
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
