import { z } from 'zod';
import { defineJob } from './job.js';
import { rebuildAllFeatures } from '../src/domain/agents/similar.js';

import { AGENT_BATCH_SIZE } from './agent-documents.job.js';

/**
 * The scheduled full recompute: rebuilds every agent's similarity features in one pass, then queues
 * an agent-documents-batch job for every page of 100 agents (keyset pagination, so it stays cheap
 * at any size). Job ids name this run, so a second scheduler
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
    const features = await rebuildAllFeatures(ctx.db);
    const run = payload.run ?? new Date().toISOString().slice(0, 13).replace(/[-T]/g, '');
    let after = '00000000-0000-0000-0000-000000000000';
    let queued = 0;
    for (;;) {
      const page = await ctx.db.selectFrom('agents').select('id').where('id', '>', after).orderBy('id').limit(AGENT_BATCH_SIZE).execute();
      if (!page.length) break;
      const agentIds = page.map((a) => a.id);
      await ctx.enqueueDocuments([{ name: 'agent-documents-batch', data: { agentIds, featuresFresh: true }, jobId: `agent-documents-batch-${agentIds[0]}-all${run}` }]);
      queued += page.length;
      after = agentIds[agentIds.length - 1]!;
    }
    return { queued, features };
  },
});
