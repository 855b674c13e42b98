import { BATCH_STATEMENT_TIMEOUT_MS, type Db, withStatementTimeout } from '../../data/db.js';
import type { SiteInfo } from '../../documents/site-info.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { publishDiscoveryDefaults } from '../discovery/documents.js';
import { recomputeAndStoreRankings } from '../discovery/rankings.js';
import { recomputeAndStorePopulation } from '../scoring/load-facts.js';

/**
 * Recomputes the statistics of the agent population as of `now`: the population quantiles (score
 * percentiles, feature frequencies) and the discovery rankings (trending, tags,
 * categories), then publishes the ranking documents. Returns the sizes of what it computed and
 * the documents published.
 */
export async function recomputePopulationStats(deps: { db: Db; store: ObjectStore; site: SiteInfo }, now = new Date()) {
  // Whole-marketplace aggregates and the search tier rebuild (an index over 100k skills) run
  // longer than a request's statement timeout at a million skills.
  const { population, rankings } = await withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, async () => ({
    population: await recomputeAndStorePopulation(deps.db, now),
    rankings: await recomputeAndStoreRankings(deps.db, now),
  }));
  const published = (await publishDiscoveryDefaults(deps, 'rankings')).filter((r) => r.outcome === 'published').length;
  return { ...population, ...rankings, published };
}

/**
 * Recomputes the population quantiles alone (not the rankings, nor the feature frequencies, which
 * the run's rebuild refreshes whenever the features' sources changed): the full recompute runs it
 * between its similar pages and its document pages, so every score of the run ranks against the
 * same breakpoints, those of the lists just stored.
 */
export async function recomputePopulationQuantiles(deps: { db: Db }, now = new Date()) {
  return withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, () =>
    recomputeAndStorePopulation(deps.db, now, { frequencies: false }),
  );
}
