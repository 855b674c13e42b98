import { z } from 'zod';
import { defineJob } from './job.js';
import { refreshAgentAnalytics } from '../src/domain/analytics/analytics.use-cases.js';

/**
 * One seller's private analytics document (docs/analytics.md), queued (coalesced per seller) by
 * its sales, refunds and reviews through the outbox, and by the API's counter flushes.
 */
export const agentAnalyticsJob = defineJob({
  name: 'agent-analytics',
  queue: 'documents',
  payload: z.object({ agentId: z.guid() }).strict(),
  async run(ctx, { agentId }) {
    const doc = await refreshAgentAnalytics(ctx.db, agentId);
    if (!doc) return { skipped: 'agent not found' };
    return { handle: doc.handle, sales: doc.totals.sales, skills: doc.funnel.length };
  },
});
