import { z } from 'zod';
import { sql } from 'kysely';
import { defineJob } from './job.js';
import { rebuildAllFeatures } from '../src/domain/agents/similar.js';
import { BATCH_STATEMENT_TIMEOUT_MS, withStatementTimeout } from '../src/data/db.js';

import { AGENT_BATCH_SIZE } from './agent-documents.job.js';

/** Pages added to the queue per bulk add. */
const ENQUEUE_CHUNK = 200;

/**
 * The scheduled full recompute: rebuilds every agent's similarity features in one pass, then queues
 * an agent-documents-batch job for every page of 100 agents (the pages read in one statement,
 * queued in bulk adds). Job ids name this run, so a second scheduler
 * replica or a retry of this job queues nothing twice; unchanged documents are skipped on publish.
 * A run started by hand names itself (`run`), or it would be taken for the hour's scheduled run
 * and queue nothing while that run's completed jobs are still remembered.
 */
export const recomputeAllJob = defineJob({
  name: 'recompute-all',
  queue: 'documents',
  payload: z
    .object({
      run: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,40}$/, 'letters, digits, - and _')
        .optional()
        .describe('names the run in the job ids; scheduled runs use the UTC hour, an operator run its own label'),
    })
    .strict(),
  async run(ctx, payload) {
    // Rebuilding every agent's features takes tens of seconds at 100k agents, over a request's statement timeout.
    const features = await withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, () => rebuildAllFeatures(ctx.db));
    const run = payload.run ?? new Date().toISOString().slice(0, 13).replace(/[-T]/g, '');
    // Every page in one statement and a few bulk adds: queued one by one, the pages already
    // running (same process) slowed the loop to ~13 pages a second at 100k agents.
    const { rows: pages } = await sql<{ ids: string[] }>`
      SELECT array_agg(id ORDER BY id) AS ids
      FROM (SELECT id, (row_number() OVER (ORDER BY id) - 1) / ${AGENT_BATCH_SIZE} AS page FROM agents) numbered
      GROUP BY page ORDER BY page`.execute(ctx.db);
    const jobs = pages.map(({ ids: agentIds }) => ({
      name: 'agent-documents-batch',
      data: { agentIds, featuresFresh: true },
      jobId: `agent-documents-batch-${agentIds[0]}-all${run}`,
    }));
    for (let i = 0; i < jobs.length; i += ENQUEUE_CHUNK) await ctx.enqueueDocuments(jobs.slice(i, i + ENQUEUE_CHUNK));
    const queued = pages.reduce((n, p) => n + p.ids.length, 0);
    return { queued, features };
  },
});
