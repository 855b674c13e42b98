import { z } from 'zod';
import { defineJob } from './job.js';
import { computePopulation } from '../src/domain/scoring/load-facts.js';
import { computeRankings } from '../src/domain/discovery/rankings.js';
import { publishDiscoveryDefaults } from '../src/domain/discovery/documents.js';

/** Recomputes the population quantiles (score percentiles, ranks) and the discovery rankings (trending, tags, categories). */
export const populationStatsJob = defineJob({
  name: 'population-stats',
  queue: 'documents',
  payload: z.object({}).strict(),
  async run(ctx) {
    const now = new Date();
    const population = await computePopulation(ctx.db, now);
    const rankings = await computeRankings(ctx.db, now);
    const published = (await publishDiscoveryDefaults(ctx, 'rankings')).filter((r) => r.outcome === 'published').length;
    return { ...population, ...rankings, published };
  },
});
