import { z } from 'zod';
import { defineJob } from './job.js';
import { rebuildAllFeatures } from '../src/domain/agents/similar.js';

const PAGE = 1000;

/**
 * The scheduled full recompute: queues an agent-documents job for every agent, a page at a time
 * (keyset pagination, so it stays cheap at any size). Job ids name this run, so a second scheduler
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
      const page = await ctx.db.selectFrom('agents').select('id').where('id', '>', after).orderBy('id').limit(PAGE).execute();
      if (!page.length) break;
      await ctx.enqueueDocuments(page.map((a) => ({ name: 'agent-documents', data: { agentId: a.id, featuresFresh: true }, jobId: `agent-documents-${a.id}-all${run}` })));
      queued += page.length;
      after = page[page.length - 1]!.id;
    }
    return { queued, features };
  },
});
