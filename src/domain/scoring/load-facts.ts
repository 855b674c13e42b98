import { sql } from 'kysely';
import { getAddress } from 'viem';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import type { AgentFacts, IdentityFacts, Population } from './facts.js';
import { WINDOW_DAYS } from './methodology.js';
import { refreshFeatureFrequencies } from '../agents/similar.js';

interface PostAggregates {
  published: number;
  paywalled: number;
  with_oasf: number;
  with_install: number;
  published_30d: number;
  paid_30d: number;
  last_publish: Date | null;
  top_categories: number;
}

interface SalesAggregates {
  last_settle: Date | null;
  revenue_90d: string;
  settlements_90d: number;
  buyers_90d: number;
  agent_buyers_90d: number;
  repeat_buyers_90d: number;
}

/** Everything score, health and best practices read about one agent, in three queries. */
export async function loadFacts(db: Db, agent: Agent, identity: IdentityFacts | null, now: Date): Promise<AgentFacts> {
  const long = new Date(now.getTime() - WINDOW_DAYS.long * 86_400_000);
  const short = new Date(now.getTime() - WINDOW_DAYS.short * 86_400_000);
  const [posts, sales, incoming] = await Promise.all([
    sql<PostAggregates>`
      SELECT
        count(*) FILTER (WHERE p.status = 'published')::int AS published,
        count(*) FILTER (WHERE p.status = 'published' AND p.price_atomic > 0)::int AS paywalled,
        count(*) FILTER (WHERE p.status = 'published' AND cardinality(p.oasf_skills) + cardinality(p.oasf_domains) > 0)::int AS with_oasf,
        count(*) FILTER (WHERE p.status = 'published' AND v.install_manifest IS NOT NULL)::int AS with_install,
        count(*) FILTER (WHERE p.published_at > ${short})::int AS published_30d,
        count(*) FILTER (WHERE p.published_at > ${short} AND p.price_atomic > 0)::int AS paid_30d,
        max(p.published_at) AS last_publish,
        (SELECT count(DISTINCT c)::int FROM posts q,
           LATERAL unnest(array(SELECT 'skill:' || split_part(x, '/', 1) FROM unnest(q.oasf_skills) x)
                       || array(SELECT 'domain:' || split_part(x, '/', 1) FROM unnest(q.oasf_domains) x)) c
         WHERE q.author_id = ${agent.id} AND q.status = 'published') AS top_categories
      FROM posts p
      JOIN post_versions v ON v.post_id = p.id AND v.version = p.current_version
      WHERE p.author_id = ${agent.id}`.execute(db),
    sql<SalesAggregates>`
      SELECT
        max(created_at) AS last_settle,
        coalesce(sum(amount_atomic) FILTER (WHERE created_at > ${long}), 0)::text AS revenue_90d,
        count(*) FILTER (WHERE created_at > ${long})::int AS settlements_90d,
        count(DISTINCT buyer_address) FILTER (WHERE created_at > ${long})::int AS buyers_90d,
        count(DISTINCT buyer_address) FILTER (WHERE created_at > ${long} AND buyer_agent_id IS NOT NULL)::int AS agent_buyers_90d,
        (SELECT count(*)::int FROM (
           SELECT buyer_address FROM purchases WHERE seller_id = ${agent.id} AND created_at > ${long}
           GROUP BY buyer_address HAVING count(*) >= 2) r) AS repeat_buyers_90d
      FROM purchases WHERE seller_id = ${agent.id}`.execute(db),
    db.selectFrom('agent_similar').select((eb) => eb.fn.countAll<string>().as('n')).where('similar_id', '=', agent.id).executeTakeFirstOrThrow(),
  ]);
  const p = posts.rows[0]!;
  const s = sales.rows[0]!;
  return {
    handle: agent.handle,
    walletAddress: getAddress(agent.wallet_address),
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
    paidPostsCount30d: p.paid_30d,
    postsPublished30d: p.published_30d,
    publishedSkillCount: p.published,
    paywalledSkillCount: p.paywalled,
    publishedWithOasf: p.with_oasf,
    publishedWithInstall: p.with_install,
    topLevelCategories: p.top_categories ?? 0,
    incomingSimilarCount: Number(incoming.n),
  };
}

const POPULATION_METRICS = ['uniqueBuyers', 'settlements', 'paidSkills', 'incomingSimilar'] as const;

/** The stored quantile breakpoints (see `computePopulation`); empty before the first computation. */
export async function loadPopulation(db: Db): Promise<Population> {
  const rows = await db.selectFrom('population_stats').select(['name', 'breakpoints']).execute();
  const pop: Population = { uniqueBuyers: [], settlements: [], paidSkills: [], incomingSimilar: [] };
  for (const r of rows) if ((POPULATION_METRICS as readonly string[]).includes(r.name)) pop[r.name as keyof Population] = r.breakpoints;
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
    const exact = row.n <= 201 ? (await sql<{ v: number }>`SELECT v FROM (${queries[name]}) m WHERE v > 0 ORDER BY v`.execute(db)).rows.map((r) => r.v) : null;
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
