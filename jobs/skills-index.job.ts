import { z } from 'zod';
import { defineJob } from './job.js';
import { publishSkillsIndex } from '../src/domain/projections/skills-index.js';

/**
 * Publishes /.well-known/agent-skills/index.json, or with `shard` one of its shards
 * (/.well-known/agent-skills/shards/{shard}.json), as the published skills read now.
 */
export const skillsIndexJob = defineJob({
  name: 'skills-index',
  queue: 'documents',
  payload: z
    .object({ shard: z.string().regex(/^[0-9a-f]{2}$/) })
    .partial()
    .strict(),
  run: (ctx, { shard }) => publishSkillsIndex(ctx, shard),
});
