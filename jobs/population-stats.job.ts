import { z } from 'zod';
import { defineJob } from './job.js';
import { computePopulation } from '../src/domain/scoring/load-facts.js';
import { computeRankings } from '../src/domain/discovery/rankings.js';

/** Recomputes the population quantiles (score percentiles, ranks) and the discovery rankings (trending, tags, categories). */
export const populationStatsJob = defineJob({
  name: 'population-stats',
  queue: 'documents',
  payload: z.object({}).strict(),
  async run(ctx) {
    const now = new Date();
    return { ...(await computePopulation(ctx.db, now)), ...(await computeRankings(ctx.db, now)) };
  },
});
