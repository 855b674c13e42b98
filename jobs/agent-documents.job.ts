import { z } from 'zod';
import { defineJob, type JobContext } from './job.js';
import { agentRecomputeJob } from '../src/domain/events/dispatcher.js';
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
    })
    .strict(),
  async run(ctx, { agentId, featuresFresh, republish }) {
    const r = await renderInTurn(ctx, [agentId], { featuresFresh, republish });
    const one = r.rendered[0];
    if (!one) return { skipped: 'agent not found' };
    return {
      handle: one.agent.handle,
      score: Math.round(one.metrics.score * 100) / 100,
      health: one.metrics.health_status,
      published: r.published,
      unchanged: r.unchanged,
      ...(r.renderedAgain ? { renderedAgain: r.renderedAgain } : {}),
    };
  },
});

/**
 * Recomputes and publishes the agents' documents in a turn of theirs: an agent another render took
 * a turn for while this one ran (src/platform/render-turns.ts) may have had fresher documents
 * written before this render's, so it is queued once more, as an event would queue it: one job per
 * agent and 250 ms window, shared with the events' (a busy seller's overtaken renders add none
 * where an event already queued the window's), which starts only once the window has closed, so
 * it reads after this render wrote.
 */
async function renderInTurn(
  ctx: JobContext,
  agentIds: string[],
  opts: Parameters<typeof recomputeAndPublishAgentDocuments>[2],
) {
  const turns = await ctx.renderTurns.take(agentIds);
  const outcome = await recomputeAndPublishAgentDocuments(ctx, agentIds, opts);
  // Only the agents this render wrote for: one left alone (its documents as published) wrote nothing.
  const rendered = new Map(outcome.rendered.map((r) => [r.agent.id, turns.get(r.agent.id) ?? 0]));
  const again = await ctx.renderTurns.overtaken(rendered);
  if (again.length) {
    const now = Date.now();
    await ctx.enqueueDocuments(
      again.map((agentId) => {
        const { name, data, jobId, delay } = agentRecomputeJob(agentId, now);
        return { name, data, jobId, delay };
      }),
    );
  }
  return { ...outcome, renderedAgain: again.length };
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
