import { z } from 'zod';
import { defineJob, type JobContext } from './job.js';
import { startFullRecompute } from '../src/domain/agents/full-recompute.use-cases.js';
import { AGENT_BATCH_SIZE, agentDocumentsBatchJob } from './agent-documents.job.js';

/**
 * The scheduled full recompute: rebuilds every agent's similarity features in one pass, then queues
 * an agent-documents-batch job for every page of 100 agents (queued in bulk adds of 200 pages). Job ids name
 * this run, so a second scheduler replica or a retry of this job queues nothing twice; unchanged
 * documents are skipped on publish. A run started by hand names itself (`run`), or it would be
 * taken for the hour's scheduled run and queue nothing while that run's completed jobs are still
 * remembered. The pages are background jobs: a sale's or an edit's job is taken before them.
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
    return startFullRecompute(
      { db: ctx.db, queuePages: (pages) => queuePages(ctx, pages, payload.run ?? utcHour(new Date())) },
      AGENT_BATCH_SIZE,
    );
  },
});

/** The run label of a scheduled run: its UTC hour, as 2024010215. */
const utcHour = (now: Date) => now.toISOString().slice(0, 13).replace(/[-T]/g, '');

/** One agent-documents-batch job per page, its id naming the page's first agent and the run. */
async function queuePages(ctx: JobContext, pages: string[][], run: string): Promise<void> {
  const jobs = pages.map((agentIds) => ({
    name: agentDocumentsBatchJob.name,
    data: { agentIds, featuresFresh: true },
    jobId: `agent-documents-batch-${agentIds[0]}-all${run}`,
  }));
  await ctx.enqueueDocuments(jobs, { background: true });
}
