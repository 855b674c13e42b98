import type { JobDefinition } from './job.js';
import { siteCardJob } from './site-card.job.js';

/** Every job the workers know, by name. */
export const JOBS: Record<string, JobDefinition> = Object.fromEntries(
  [siteCardJob].map((job) => [job.name, job as unknown as JobDefinition]),
);
