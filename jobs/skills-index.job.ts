import { z } from 'zod';
import { defineJob } from './job.js';
import { publishSkillsIndex, unpublishedShards } from '../src/domain/projections/skills-index.js';

/**
 * Publishes /.well-known/agent-skills/index.json, or with `shard` one of its shards
 * (/.well-known/agent-skills/shards/{shard}.json), as the published skills read now. After the
 * index, it queues every shard the bucket has not got yet, so the index links no shard that only
 * the API's fallback answers.
 */
export const skillsIndexJob = defineJob({
  name: 'skills-index',
  queue: 'documents',
  payload: z
    .object({ shard: z.string().regex(/^[0-9a-f]{2}$/) })
    .partial()
    .strict(),
  async run(ctx, { shard }) {
    const result = await publishSkillsIndex(ctx, shard);
    if (shard !== undefined) return result;
    const missing = await unpublishedShards(ctx.db);
    // One id per shard and hour: an index published again meanwhile queues none twice, even while
    // event jobs keep these background jobs waiting.
    const hour = Math.floor(Date.now() / 3_600_000);
    await ctx.enqueueDocuments(
      missing.map((s) => ({ name: 'skills-index', data: { shard: s }, jobId: `skills-index-${s}-missing-${hour}` })),
      { background: true },
    );
    return { ...result, shardsQueued: missing.length };
  },
});
