import { z } from 'zod';
import { sql } from 'kysely';
import { defineJob, type JobContext } from './job.js';
import { agentDocumentKey, renderAgentDocumentsMany } from '../src/domain/agents/agent-documents.js';
import { publishDocuments } from '../src/domain/documents/publish-document.js';

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

/**
 * Recomputes the agents' score, checklist, health, card, badge, identity, similar list and
 * reputation mirror, publishes what changed, and records the figures feeds and rankings read: a
 * fixed number of statements for the whole set, so a batch costs little more than one agent.
 */
async function recomputeAgents(
  ctx: JobContext,
  agentIds: string[],
  opts: { featuresFresh?: boolean; republish?: boolean },
) {
  const agents = await ctx.db.selectFrom('agents').selectAll().where('id', 'in', agentIds).orderBy('id').execute();
  if (!agents.length) return { agents: 0, published: 0, unchanged: 0, rewritten: 0, timings: {}, rendered: [] };
  const timings: Record<string, number> = {};
  const rendered = await renderAgentDocumentsMany(
    { db: ctx.db, site: ctx.site, chain: ctx.chain },
    agents,
    new Date(),
    {
      featuresFresh: opts.featuresFresh,
      timings,
      skipUnchangedReputation: !opts.republish,
    },
  );
  let mark = performance.now();
  const results = await publishDocuments(
    ctx,
    rendered.flatMap((r) => r.documents),
    { force: opts.republish },
  );
  timings.publishMs = Math.round(performance.now() - mark);
  mark = performance.now();
  const published = results.filter((r) => r.outcome === 'published').length;
  const republished = new Set(results.filter((r) => r.outcome === 'published').map((r) => r.key));
  const before = new Map(
    (
      await ctx.db
        .selectFrom('agent_metrics')
        .select([
          'agent_id',
          'health_status',
          'published_skills',
          'unique_buyers_90d',
          'settlements_90d',
          'revenue_atomic_90d',
        ])
        .where(sql<boolean>`agent_id = ANY(${agents.map((a) => a.id)}::uuid[])`)
        .execute()
    ).map((m) => [m.agent_id, m]),
  );
  // The metrics row follows the published score document: rewritten when that document was
  // (something material changed, or it was due for its daily refresh) or a figure it keeps moved.
  // Rewriting a figure the agent feed shows marks the agent changed (a trigger, migration 0015),
  // and the feed indexer moves it if its item, as shown, differs.
  const figures = (m: {
    health_status: string;
    published_skills: number;
    unique_buyers_90d: number;
    settlements_90d: number;
    revenue_atomic_90d: string | bigint;
  }) => `${m.health_status}|${m.published_skills}|${m.unique_buyers_90d}|${m.settlements_90d}|${m.revenue_atomic_90d}`;
  const stale = agents
    .map((agent, i) => ({ agent, r: rendered[i]! }))
    .filter(({ agent, r }) => {
      const was = before.get(agent.id);
      return (
        !was || republished.has(agentDocumentKey(agent.handle, 'score.json')) || figures(was) !== figures(r.metrics)
      );
    });
  const computedAt = new Date();
  if (stale.length) {
    await ctx.db
      .insertInto('agent_metrics')
      .values(
        stale.map(({ agent, r }) => ({
          agent_id: agent.id,
          ...r.metrics,
          document: JSON.stringify(r.score),
          computed_at: computedAt,
        })),
      )
      .onConflict((oc) =>
        oc.column('agent_id').doUpdateSet((eb) => ({
          score: eb.ref('excluded.score'),
          raw_score: eb.ref('excluded.raw_score'),
          health_status: eb.ref('excluded.health_status'),
          revenue_atomic_90d: eb.ref('excluded.revenue_atomic_90d'),
          unique_buyers_90d: eb.ref('excluded.unique_buyers_90d'),
          settlements_90d: eb.ref('excluded.settlements_90d'),
          published_skills: eb.ref('excluded.published_skills'),
          document: eb.ref('excluded.document'),
          computed_at: eb.ref('excluded.computed_at'),
        })),
      )
      .execute();
  }
  timings.metricsMs = Math.round(performance.now() - mark);
  return {
    agents: agents.length,
    published,
    unchanged: results.length - published,
    rewritten: stale.length,
    timings,
    rendered: agents.map((a, i) => ({ agent: a, metrics: rendered[i]!.metrics })),
  };
}

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
    const r = await recomputeAgents(ctx, [agentId], { featuresFresh, republish });
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
    const { rendered: _, ...summary } = await recomputeAgents(ctx, agentIds, { featuresFresh });
    return { ...summary, missing: agentIds.length - summary.agents };
  },
});
