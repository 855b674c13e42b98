import { z } from 'zod';
import { defineJob } from './job.js';
import { publishSiteDocuments } from '../src/domain/publishing/publish-site-documents.use-cases.js';

/** Renders, validates and publishes the site-level AgentCard, the crawl extension it names and the methodologies. */
export const siteCardJob = defineJob({
  name: 'site-card',
  queue: 'documents',
  payload: z.object({}).strict(),
  run: (ctx) => publishSiteDocuments(ctx),
});
