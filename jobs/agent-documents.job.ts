import { z } from 'zod';
import { defineJob } from './job.js';
import { recomputeAndPublishAgentDocuments } from '../src/domain/agents/publish-agent-documents.use-cases.js';

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
    const r = await recomputeAndPublishAgentDocuments(ctx, [agentId], { featuresFresh, republish });
    const one = r.rendered[0];
    if (!one) return { skipped: 'agent not found' };
    return {
      handle: one.agent.handle,
      score: Math.round(one.metrics.score * 100) / 100,
      health: one.metrics.health_status,
      published: r.published,
      unchanged: r.unchanged,
    };
  },
});

/** A page of agents' documents at once: what the full recompute queues. */
export const agentDocumentsBatchJob = defineJob({
  name: 'agent-documents-batch',
  queue: 'documents',
  payload: z.object({ agentIds: z.array(z.guid()).min(1).max(1000), featuresFresh }).strict(),
  async run(ctx, { agentIds, featuresFresh }) {
    const { rendered: _, ...summary } = await recomputeAndPublishAgentDocuments(ctx, agentIds, { featuresFresh });
    return { ...summary, missing: agentIds.length - summary.agents };
  },
});
