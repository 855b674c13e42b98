import { z } from 'zod';
import { defineJob } from './job.js';
import { renderAgentDocuments } from '../src/domain/agents/agent-documents.js';
import { publishDocuments } from '../src/domain/documents/publish-document.js';

/**
 * Recomputes one agent's score, checklist, health, card, badge, identity, similar list and
 * reputation mirror, publishes what changed, and records the figures feeds and rankings read.
 */
export const agentDocumentsJob = defineJob({
  name: 'agent-documents',
  queue: 'documents',
  payload: z
    .object({
      agentId: z.guid(),
      featuresFresh: z.boolean().optional().describe('set by recompute-all, which rebuilt every agent\'s similarity features just before'),
    })
    .strict(),
  async run(ctx, { agentId, featuresFresh }) {
    const agent = await ctx.db.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirst();
    if (!agent) return { skipped: 'agent not found' };
    const rendered = await renderAgentDocuments({ db: ctx.db, site: ctx.site, chain: ctx.chain }, agent, new Date(), { featuresFresh });
    const results = await publishDocuments(ctx, rendered.documents);
    const published = results.filter((r) => r.outcome === 'published').length;
    const unchanged = results.length - published;
    const before = await ctx.db.selectFrom('agent_metrics').select(['score', 'health_status', 'published_skills', 'unique_buyers_90d']).where('agent_id', '=', agent.id).executeTakeFirst();
    await ctx.db
      .insertInto('agent_metrics')
      .values({ agent_id: agent.id, ...rendered.metrics, document: JSON.stringify(rendered.score), computed_at: new Date() })
      .onConflict((oc) => oc.column('agent_id').doUpdateSet({ ...rendered.metrics, document: JSON.stringify(rendered.score), computed_at: new Date() }))
      .execute();
    // The agent feed carries score, health and counts: when they change, the agent moves up the feed.
    const visible = (m: { score: number; health_status: string; published_skills: number; unique_buyers_90d: number }) =>
      `${m.score.toFixed(2)}|${m.health_status}|${m.published_skills}|${m.unique_buyers_90d}`;
    if (!before || visible(before) !== visible(rendered.metrics)) {
      await ctx.db.updateTable('agents').set({ updated_at: agent.updated_at }).where('id', '=', agent.id).execute();
    }
    return { handle: agent.handle, score: Math.round(rendered.metrics.score * 100) / 100, health: rendered.metrics.health_status, published, unchanged };
  },
});
