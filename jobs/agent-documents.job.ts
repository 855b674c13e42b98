import { z } from 'zod';
import { defineJob, type JobContext } from './job.js';
import { recomputeAndPublishAgentDocuments } from '../src/domain/agents/publish-agent-documents.use-cases.js';
import { recomputeSimilarPageOfRun } from '../src/domain/agents/full-recompute.use-cases.js';

/**
 * Agents per `agent-documents-batch` job of the full recompute. With 250, four concurrent jobs
 * held 250 × nine documents each (reputation alone is up to 70 kB an agent) and the worker's
 * memory peaked near 1 GiB; 100 keeps the statements per agent small and the peak lower.
 */
export const AGENT_BATCH_SIZE = 100;

const featuresFresh = z
  .boolean()
  .optional()
  .describe("set by recompute-all, which rebuilt every agent's similarity features just before");

/** One agent's documents, queued (deduplicated) by the domain events that touch it. */
export const agentDocumentsJob = defineJob({
  name: 'agent-documents',
  queue: 'documents',
  payload: z
    .object({
      agentId: z.guid(),
      featuresFresh,
      republish: z
        .boolean()
        .optional()
        .describe(
          'write every document even if its bookkeeping says unchanged: a read found one missing from the bucket',
        ),
      rewrite: z
        .boolean()
        .optional()
        .describe('write every document again: a render that read earlier may have written over a later one'),
    })
    .strict(),
  async run(ctx, { agentId, featuresFresh, republish, rewrite }) {
    const r = await renderInTurn(ctx, [agentId], { featuresFresh, republish, rewrite });
    const one = r.rendered[0];
    if (!one) return { skipped: 'agent not found' };
    return {
      handle: one.agent.handle,
      score: Math.round(one.metrics.score * 100) / 100,
      health: one.metrics.health_status,
      published: r.published,
      unchanged: r.unchanged,
      ...(r.writtenAgain ? { writtenAgain: r.writtenAgain } : {}),
    };
  },
});

/**
 * How long after an overtaken render its agent is written again: longer than one agent's render
 * takes (a busy seller's took 0.3-0.5 s at 100k agents), so the render that overtook it has
 * finished by then, and the job writing again cannot itself overtake that one.
 */
export const REWRITE_AFTER_MS = 2_000;

/**
 * Recomputes and publishes the agents' documents in a turn of theirs (src/platform/render-turns.ts):
 * an agent whose documents a later render began writing before this one had finished may show this
 * render's older ones, and its bookkeeping may name either, so it is queued to be written again,
 * whole (`rewrite`), REWRITE_AFTER_MS later. The job's id names the turn that overtook this one:
 * renders overtaken by the same turn queue one job, and a later overtaking names another. A render
 * that fails once it began writing checks too, before its error is thrown: its retry renders afresh
 * but writes only what its bookkeeping says changed, which a later render's rows may hide.
 */
async function renderInTurn(
  ctx: JobContext,
  agentIds: string[],
  opts: Parameters<typeof recomputeAndPublishAgentDocuments>[2],
) {
  const turns = await ctx.renderTurns.take(agentIds);
  const writing = new Map<string, number>();
  const writeAgainIfOvertaken = async () => {
    const again = await ctx.renderTurns.overtaken(writing);
    if (again.size)
      await ctx.enqueueDocuments(
        [...again].map(([agentId, by]) => ({
          name: agentDocumentsJob.name,
          data: { agentId, rewrite: true },
          jobId: `${agentDocumentsJob.name}-${agentId}-after-${by}`,
          delay: REWRITE_AFTER_MS,
        })),
      );
    return again.size;
  };
  let outcome: Awaited<ReturnType<typeof recomputeAndPublishAgentDocuments>>;
  try {
    outcome = await recomputeAndPublishAgentDocuments(ctx, agentIds, {
      ...opts,
      // Only the agents this render writes for: one left alone (its documents as published) writes nothing.
      beforeWrite: async (rendered) => {
        for (const id of rendered) {
          const turn = turns.get(id);
          if (turn !== undefined) writing.set(id, turn);
        }
        await ctx.renderTurns.writing(writing);
      },
    });
  } catch (err) {
    await writeAgainIfOvertaken().catch((checkErr: unknown) =>
      ctx.log.warn({ err: checkErr, agents: writing.size }, 'a failed render could not check whether it was overtaken'),
    );
    throw err;
  }
  return { ...outcome, writtenAgain: await writeAgainIfOvertaken() };
}

const agentIds = z.array(z.guid()).min(1).max(1000);

/** A page of agents' documents at once: what the full recompute queues. */
export const agentDocumentsBatchJob = defineJob({
  name: 'agent-documents-batch',
  queue: 'documents',
  payload: z
    .object({
      agentIds,
      featuresFresh,
      similarStored: z
        .boolean()
        .optional()
        .describe("set by recompute-all, whose similar pages stored every agent's similar list just before"),
      skipUnchanged: z
        .boolean()
        .optional()
        .describe(
          'set by recompute-all: leave alone the agents whose inputs and published documents are as last recorded',
        ),
    })
    .strict(),
  async run(ctx, { agentIds, featuresFresh, similarStored, skipUnchanged }) {
    const { rendered: _, ...summary } = await renderInTurn(ctx, agentIds, {
      featuresFresh,
      similarStored,
      skipUnchanged,
    });
    return { ...summary, missing: agentIds.length - summary.agents };
  },
});

/**
 * A page of agents' similar lists, ranked against the signatures the full recompute just rebuilt
 * and stored: the full recompute queues them all before its document pages, so a score's count of
 * agents listing it as similar reads every list of the run.
 */
export const agentSimilarBatchJob = defineJob({
  name: 'agent-similar-batch',
  queue: 'documents',
  payload: z
    .object({
      agentIds,
      run: z.string().max(40).optional().describe('the recompute-all run that queued it, which records the page done'),
    })
    .strict(),
  async run(ctx, { agentIds, run }) {
    const started = performance.now();
    const { ranked, kept } = await recomputeSimilarPageOfRun(ctx.db, agentIds, run);
    return { agents: ranked + kept, ranked, kept, ms: Math.round(performance.now() - started) };
  },
});
