import { z } from 'zod';
import { defineJob, RunAgainLater } from './job.js';
import { finishFullRecompute, startFullRecompute } from '../src/domain/agents/full-recompute.use-cases.js';
import { recomputePopulationQuantiles } from '../src/domain/agents/population-stats.use-cases.js';
import { AGENT_BATCH_SIZE, agentDocumentsBatchJob, agentSimilarBatchJob } from './agent-documents.job.js';

/** A run's label: letters, digits, - and _. */
const RUN_LABEL = /^[A-Za-z0-9_-]{1,40}$/;

/**
 * The scheduled full recompute, first stage: rebuilds every agent's similarity features in one
 * pass, queues an agent-similar-batch job for every page of 100 agents (in bulk adds of 40 pages),
 * then the second stage, recompute-all-documents, at a lower priority, so it is taken only once
 * every similar page has been. Job ids name this run, so a second scheduler replica or a retry of
 * this job queues nothing twice; unchanged documents are skipped on publish. A run started by hand
 * names itself (`run`), or it would be taken for the hour's scheduled run and queue nothing while
 * that run's completed jobs are still remembered. The pages are background jobs: a sale's or an
 * edit's job is taken before them.
 */
export const recomputeAllJob = defineJob({
  name: 'recompute-all',
  queue: 'documents',
  payload: z
    .object({
      run: z
        .string()
        .regex(RUN_LABEL, 'letters, digits, - and _')
        .optional()
        .describe('names the run in the job ids; scheduled runs use the UTC hour, an operator run its own label'),
    })
    .strict(),
  async run(ctx, payload) {
    const run = payload.run ?? utcHour(new Date());
    return startFullRecompute(
      {
        db: ctx.db,
        run,
        queueSimilarPages: (pages) =>
          ctx.enqueueDocuments(pageJobs(agentSimilarBatchJob.name, pages, run, { run }), { background: true }),
        queueDocumentsStage: () =>
          ctx.enqueueDocuments(
            [
              {
                name: recomputeAllDocumentsJob.name,
                data: { run, since: Date.now() },
                jobId: `${recomputeAllDocumentsJob.name}-${run}`,
              },
            ],
            { background: true, stage: 1 },
          ),
      },
      AGENT_BATCH_SIZE,
    );
  },
});

/**
 * The full recompute's second stage: once every similar page of the run is done (it runs again
 * every fifth of a second until then, for at most 30 minutes after it was queued), recomputes the
 * population quantiles from the lists they stored, then queues an agent-documents-batch job for
 * every page, which read those lists instead of ranking again.
 */
export const recomputeAllDocumentsJob = defineJob({
  name: 'recompute-all-documents',
  queue: 'documents',
  payload: z
    .object({
      run: z.string().regex(RUN_LABEL, 'letters, digits, - and _').describe('the run of recompute-all'),
      since: z.number().int().min(0).describe('when the stage was queued (ms since the epoch)'),
    })
    .strict(),
  async run(ctx, { run, since }) {
    const outcome = await finishFullRecompute(
      {
        db: ctx.db,
        recomputeQuantiles: () => recomputePopulationQuantiles(ctx),
        queueDocumentPages: (pages) =>
          ctx.enqueueDocuments(
            pageJobs(agentDocumentsBatchJob.name, pages, run, {
              featuresFresh: true,
              similarStored: true,
              skipUnchanged: true,
            }),
            { background: true, stage: 1 },
          ),
      },
      { name: run, since },
      AGENT_BATCH_SIZE,
    );
    if ('waiting' in outcome) throw new RunAgainLater(SIMILAR_PAGES_POLL_MS);
    if (outcome.leftBehind > 0)
      ctx.log.warn(
        { run, leftBehind: outcome.leftBehind },
        'documents recomputed without every similar page of the run',
      );
    return outcome;
  },
});

/**
 * How often the documents stage looks again whether the similar pages are done: a count of the
 * run's thousand-odd planned pages, cheap enough that the stage need not lose a second waiting.
 * Each look is a start of the job in BullMQ's count (up to 9,000 in the 30-minute wait), so its
 * worker must not bound a job's starts (`maxStartedAttempts`).
 */
const SIMILAR_PAGES_POLL_MS = 200;

/** The run label of a scheduled run: its UTC hour, as 2024010215. */
const utcHour = (now: Date) => now.toISOString().slice(0, 13).replace(/[-T]/g, '');

/** One job per page, its id naming the job, the page's first agent and the run. */
const pageJobs = (name: string, pages: string[][], run: string, data: Record<string, unknown>) =>
  pages.map((agentIds) => ({ name, data: { agentIds, ...data }, jobId: `${name}-${agentIds[0]}-all${run}` }));
