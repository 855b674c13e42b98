import { z } from 'zod';
import { defineJob } from './job.js';
import { recomputePopulationStats } from '../src/domain/agents/population-stats.use-cases.js';

/** Recomputes the population quantiles (score percentiles, feature frequencies) and the discovery rankings (trending, tags, categories). */
export const populationStatsJob = defineJob({
  name: 'population-stats',
  queue: 'documents',
  payload: z.object({}).strict(),
  run: (ctx) => recomputePopulationStats(ctx),
});
