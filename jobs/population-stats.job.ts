import { z } from 'zod';
import { defineJob } from './job.js';
import { recomputeAndStorePopulation } from '../src/domain/scoring/load-facts.js';
import { recomputeAndStoreRankings } from '../src/domain/discovery/rankings.js';
import { publishDiscoveryDefaults } from '../src/domain/discovery/documents.js';
import { BATCH_STATEMENT_TIMEOUT_MS, withStatementTimeout } from '../src/data/db.js';

/** Recomputes the population quantiles (score percentiles, ranks) and the discovery rankings (trending, tags, categories). */
export const populationStatsJob = defineJob({
  name: 'population-stats',
  queue: 'documents',
  payload: z.object({}).strict(),
  async run(ctx) {
    const now = new Date();
    // Whole-marketplace aggregates and the search tier rebuild (an index over 100k skills) run
    // longer than a request's statement timeout at a million skills.
    const { population, rankings } = await withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, async () => ({
      population: await recomputeAndStorePopulation(ctx.db, now),
      rankings: await recomputeAndStoreRankings(ctx.db, now),
    }));
    const published = (await publishDiscoveryDefaults(ctx, 'rankings')).filter((r) => r.outcome === 'published').length;
    return { ...population, ...rankings, published };
  },
});
