import { checksummed } from '../../platform/chain/checksum.js';
import { allSettledOrThrow } from '../../platform/settle-all.js';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import {
  loadActivityAggregates,
  type ActivityAggregates,
  type PostAggregates,
  type SalesAggregates,
} from '../../data/scoring.repository.js';
import {
  loadPopulationStats,
  loadPopulationValues,
  measurePopulationQuantiles,
  measureSalesQuantiles,
  POPULATION_METRICS,
  type PopulationMetric,
  savePopulationStat,
} from '../../data/population.repository.js';
import type { AgentFacts, IdentityFacts, Population } from './facts.js';
import { WINDOW_DAYS } from './methodology.js';
import { refreshFeatureFrequencies } from '../agents/similar.js';
import { loadRecordedActivity } from './recorded-activity.js';

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
  const [facts] = await loadFactsMany(db, [{ agent, identity }], now);
  if (!facts) throw new Error('loadFactsMany answers one facts record per agent');
  return facts;
}

/** An agent whose facts are read, with its identity's facts (read by the caller from the chain's cache). */
export type FactsSubject = { agent: Agent; identity: IdentityFacts | null };

/** The starts of the two windows as of `now`. */
const windowsAt = (now: Date) => ({
  short: new Date(now.getTime() - WINDOW_DAYS.short * 86_400_000),
  long: new Date(now.getTime() - WINDOW_DAYS.long * 86_400_000),
});

/**
 * The facts of many agents at once, in four grouped queries whatever their number: the full
 * recompute loads a few hundred agents a statement instead of five statements an agent.
 */
export async function loadFactsMany(db: Db, subjects: FactsSubject[], now: Date): Promise<AgentFacts[]> {
  if (!subjects.length) return [];
  const ids = subjects.map((s) => s.agent.id);
  return factsFromActivity(subjects, await loadActivityAggregates(db, ids, windowsAt(now)));
}

/**
 * `loadFactsMany` with each agent's activity recorded where its posts, or its purchases, did not
 * change (`loadRecordedActivity`; every render of agents' documents), and the agents' published
 * skills' digests recorded beside it.
 */
export async function loadFactsRecorded(
  db: Db,
  subjects: FactsSubject[],
  now: Date,
): Promise<{ facts: AgentFacts[]; skillsDigests: Map<string, string>; reread: number }> {
  if (!subjects.length) return { facts: [], skillsDigests: new Map(), reread: 0 };
  const ids = subjects.map((s) => s.agent.id);
  const activity = await loadRecordedActivity(db, ids, now);
  return {
    facts: factsFromActivity(subjects, activity),
    skillsDigests: activity.skillsDigests,
    reread: activity.reread,
  };
}

/** Each subject's facts from its activity's aggregates and its own row (pure). */
function factsFromActivity(subjects: FactsSubject[], activity: ActivityAggregates): AgentFacts[] {
  const byAgent = <T extends { agent_id: string }>(rows: T[]) => new Map(rows.map((r) => [r.agent_id, r]));
  const [postsOf, categoriesOf, salesOf, incomingOf] = [
    byAgent(activity.posts),
    byAgent(activity.categories),
    byAgent(activity.sales),
    byAgent(activity.incoming),
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

const isPopulationMetric = (name: string): name is keyof Population =>
  (POPULATION_METRICS as readonly string[]).includes(name);

/** The stored quantile breakpoints (see `recomputeAndStorePopulation`); empty before the first computation. */
export async function loadPopulation(db: Db): Promise<Population> {
  const rows = await loadPopulationStats(db);
  const pop: Population = { uniqueBuyers: [], settlements: [], paidSkills: [], incomingSimilar: [] };
  for (const r of rows) if (isPopulationMetric(r.name)) pop[r.name] = r.breakpoints;
  return pop;
}

/**
 * The population-wide breakpoints the percentile components rank against, as of `now`: 201
 * quantiles (every half percent) of each metric over the agents where it is non-zero, with the
 * number of those agents. Ranking against breakpoints is exact for small populations (every value
 * kept) and within half a percent for large ones.
 */
export async function measurePopulation(
  db: Db,
  now: Date,
): Promise<Record<PopulationMetric, { breakpoints: number[]; n: number }>> {
  const long = new Date(now.getTime() - WINDOW_DAYS.long * 86_400_000);
  const fractions = Array.from({ length: 201 }, (_, i) => i / 200);
  // Each read on its own connection, at once: the purchases' is most of the time.
  const [sales, paidSkills, incomingSimilar] = await allSettledOrThrow([
    measureSalesQuantiles(db, long, fractions),
    measurePopulationQuantiles(db, 'paidSkills', long, fractions),
    measurePopulationQuantiles(db, 'incomingSimilar', long, fractions),
  ]);
  const measured = { ...sales, paidSkills, incomingSimilar };
  const population = {} as Record<PopulationMetric, { breakpoints: number[]; n: number }>;
  for (const name of POPULATION_METRICS) {
    const { breakpoints, n } = measured[name];
    // Small populations keep every value, so ranks are exact there.
    const exact = n <= 201 ? await loadPopulationValues(db, name, long) : null;
    population[name] = { breakpoints: exact ?? breakpoints ?? [], n };
  }
  return population;
}

/**
 * Recomputes and stores the population's breakpoints (`measurePopulation`). With `frequencies`,
 * first refreshes the feature frequencies (the population job; the full recompute's documents read
 * none, and its rebuild refreshes them whenever the features' sources changed). Returns the
 * population sizes.
 */
export async function recomputeAndStorePopulation(
  db: Db,
  now: Date,
  opts: { frequencies: boolean } = { frequencies: true },
): Promise<Record<string, number>> {
  const sizes: Record<string, number> = opts.frequencies ? { features: await refreshFeatureFrequencies(db) } : {};
  const population = await measurePopulation(db, now);
  for (const name of POPULATION_METRICS) {
    const { breakpoints, n } = population[name];
    await savePopulationStat(db, { name, breakpoints, population: n, computedAt: now });
    sizes[name] = n;
  }
  return sizes;
}
