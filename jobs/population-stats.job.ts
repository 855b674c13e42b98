import { z } from 'zod';
import { defineJob } from './job.js';
import { computePopulation } from '../src/domain/scoring/load-facts.js';

/** Recomputes the population quantiles the score's percentile components rank against. */
export const populationStatsJob = defineJob({
  name: 'population-stats',
  queue: 'documents',
  payload: z.object({}).strict(),
  async run(ctx) {
    return computePopulation(ctx.db, new Date());
  },
});
