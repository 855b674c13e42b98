import { sql } from 'kysely';
import { checksummed } from '../../platform/chain/checksum.js';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import type { AgentFacts, IdentityFacts, Population } from './facts.js';
import { WINDOW_DAYS } from './methodology.js';
import { refreshFeatureFrequencies } from '../agents/similar.js';

interface PostAggregates {
  agent_id: string;
  published: number;
  paywalled: number;
  with_oasf: number;
  with_install: number;
  published_30d: number;
  paid_30d: number;
  last_publish: Date | null;
}

interface SalesAggregates {
  agent_id: string;
  last_settle: Date | null;
  revenue_90d: string;
  settlements_90d: number;
  settlements_all: number;
  buyers_90d: number;
  agent_buyers_90d: number;
  repeat_buyers_90d: number;
}

const NO_POSTS: Omit<PostAggregates, 'agent_id'> = {
  published: 0,
  paywalled: 0,
  with_oasf: 0,
  with_install: 0,
  published_30d: 0,
  paid_30d: 0,
  last_publish: null,
};
const NO_SALES: Omit<SalesAggregates, 'agent_id'> = {
  last_settle: null,
  revenue_90d: '0',
  settlements_90d: 0,
  settlements_all: 0,
  buyers_90d: 0,
  agent_buyers_90d: 0,
  repeat_buyers_90d: 0,
};

/** Everything score, health and best practices read about one agent. */
export async function loadFacts(db: Db, agent: Agent, identity: IdentityFacts | null, now: Date): Promise<AgentFacts> {
  return (await loadFactsMany(db, [{ agent, identity }], now))[0]!;
}

/**
 * The facts of many agents at once, in four grouped queries whatever their number: the full
 * recompute loads a few hundred agents a statement instead of five statements an agent.
 */
export async function loadFactsMany(
  db: Db,
  subjects: Array<{ agent: Agent; identity: IdentityFacts | null }>,
  now: Date,
): Promise<AgentFacts[]> {
  if (!subjects.length) return [];
  const ids = subjects.map((s) => s.agent.id);
  const long = new Date(now.getTime() - WINDOW_DAYS.long * 86_400_000);
  const short = new Date(now.getTime() - WINDOW_DAYS.short * 86_400_000);
  const byAgent = <T extends { agent_id: string }>(rows: T[]) => new Map(rows.map((r) => [r.agent_id, r]));
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
    sql<{ agent_id: string; n: number }>`
      SELECT q.author_id AS agent_id, count(DISTINCT c)::int AS n FROM posts q,
        LATERAL unnest(array(SELECT 'skill:' || split_part(x, '/', 1) FROM unnest(q.oasf_skills) x)
                    || array(SELECT 'domain:' || split_part(x, '/', 1) FROM unnest(q.oasf_domains) x)) c
      WHERE q.author_id = ANY(${ids}::uuid[]) AND q.status = 'published'
      GROUP BY q.author_id`.execute(db),
    // One read of the sellers' purchases, per (seller, buyer) first: distinct and repeat buyers
    // are then plain counts (two reads and a DISTINCT sort each cost twice as much).
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
        FROM purchases WHERE seller_id = ANY(${ids}::uuid[])
        GROUP BY seller_id, buyer_address) per_buyer
      GROUP BY seller_id`.execute(db),
    // Counted agent by agent through the similar_id index: as one `= ANY` over the table, a
    // planner without statistics for agent_similar (filled since the last ANALYZE) scanned all of
    // it, 1M rows and 70 ms, for every page of a full recompute.
    sql<{ agent_id: string; n: number }>`
      SELECT a.id AS agent_id, (SELECT count(*) FROM agent_similar s WHERE s.similar_id = a.id)::int AS n FROM unnest(${ids}::uuid[]) a(id)`.execute(
      db,
    ),
  ]);
  const [postsOf, categoriesOf, salesOf, incomingOf] = [
    byAgent(posts.rows),
    byAgent(categories.rows),
    byAgent(sales.rows),
    byAgent(incoming.rows),
  ];
  return subjects.map(({ agent, identity }) => {
    const p = postsOf.get(agent.id) ?? NO_POSTS;
    const s = salesOf.get(agent.id) ?? NO_SALES;
    return {
      handle: agent.handle,
      walletAddress: checksummed(agent.wallet_address),
      tokenId: agent.token_id,
      profile: {
        displayName: agent.display_name,
        bio: agent.bio,
        avatarUrl: agent.avatar_url,
        websiteUrl: agent.website_url,
        contactEmail: agent.contact_email,
        contactUrl: agent.contact_url,
        docsUrl: agent.docs_url,
        capabilities: agent.capabilities,
        oasfSkills: agent.oasf_skills,
        oasfDomains: agent.oasf_domains,
        hasInstallManifest: agent.install_manifest !== null,
      },
      identity,
      lastSettleAt: s.last_settle,
      lastPublishAt: p.last_publish,
      revenueAtomic90d: BigInt(s.revenue_90d),
      uniqueBuyers90d: s.buyers_90d,
      repeatBuyers90d: s.repeat_buyers_90d,
      agentBuyers90d: s.agent_buyers_90d,
      settlementCount90d: s.settlements_90d,
      settlementCountAll: s.settlements_all,
      paidPostsCount30d: p.paid_30d,
      postsPublished30d: p.published_30d,
      publishedSkillCount: p.published,
      paywalledSkillCount: p.paywalled,
      publishedWithOasf: p.with_oasf,
      publishedWithInstall: p.with_install,
      topLevelCategories: categoriesOf.get(agent.id)?.n ?? 0,
      incomingSimilarCount: incomingOf.get(agent.id)?.n ?? 0,
    };
  });
}

const POPULATION_METRICS = ['uniqueBuyers', 'settlements', 'paidSkills', 'incomingSimilar'] as const;

/** The stored quantile breakpoints (see `computePopulation`); empty before the first computation. */
export async function loadPopulation(db: Db): Promise<Population> {
  const rows = await db.selectFrom('population_stats').select(['name', 'breakpoints']).execute();
  const pop: Population = { uniqueBuyers: [], settlements: [], paidSkills: [], incomingSimilar: [] };
  for (const r of rows)
    if ((POPULATION_METRICS as readonly string[]).includes(r.name)) pop[r.name as keyof Population] = r.breakpoints;
  return pop;
}

/**
 * Recomputes the population-wide breakpoints the percentile components rank against: 201
 * quantiles (every half percent) of each metric over the agents where it is non-zero. Ranking
 * against breakpoints is exact for small populations and within half a percent for large ones.
 */
export async function computePopulation(db: Db, now: Date): Promise<Record<string, number>> {
  const long = new Date(now.getTime() - WINDOW_DAYS.long * 86_400_000);
  const fractions = Array.from({ length: 201 }, (_, i) => i / 200);
  const queries: Record<(typeof POPULATION_METRICS)[number], ReturnType<typeof sql<{ v: number }>>> = {
    uniqueBuyers: sql`SELECT count(DISTINCT buyer_address)::float8 AS v FROM purchases WHERE created_at > ${long} GROUP BY seller_id`,
    settlements: sql`SELECT count(*)::float8 AS v FROM purchases WHERE created_at > ${long} GROUP BY seller_id`,
    paidSkills: sql`SELECT count(*)::float8 AS v FROM posts WHERE status = 'published' AND price_atomic > 0 GROUP BY author_id`,
    incomingSimilar: sql`SELECT count(*)::float8 AS v FROM agent_similar GROUP BY similar_id`,
  };
  const sizes: Record<string, number> = { features: await refreshFeatureFrequencies(db) };
  const ranked = await sql`
    UPDATE agent_metrics m SET rank = r.rank
    FROM (SELECT agent_id, rank() OVER (ORDER BY score DESC)::int AS rank FROM agent_metrics) r
    WHERE m.agent_id = r.agent_id AND m.rank IS DISTINCT FROM r.rank`.execute(db);
  sizes.rankChanges = Number(ranked.numAffectedRows ?? 0);
  for (const name of POPULATION_METRICS) {
    const { rows } = await sql<{ breakpoints: number[] | null; n: number }>`
      SELECT percentile_disc(${fractions}::float8[]) WITHIN GROUP (ORDER BY v) AS breakpoints, count(*)::int AS n
      FROM (${queries[name]}) m WHERE v > 0`.execute(db);
    const row = rows[0]!;
    // Small populations keep every value, so ranks are exact there.
    const exact =
      row.n <= 201
        ? (await sql<{ v: number }>`SELECT v FROM (${queries[name]}) m WHERE v > 0 ORDER BY v`.execute(db)).rows.map(
            (r) => r.v,
          )
        : null;
    const breakpoints = exact ?? row.breakpoints ?? [];
    await db
      .insertInto('population_stats')
      .values({ name, breakpoints, population: row.n, computed_at: now })
      .onConflict((oc) => oc.column('name').doUpdateSet({ breakpoints, population: row.n, computed_at: now }))
      .execute();
    sizes[name] = row.n;
  }
  return sizes;
}
