import { z } from 'zod';
import { defineJob } from './job.js';
import { publishSkillsIndex } from '../src/domain/projections/skills-index.js';

/** Publishes /.well-known/agent-skills/index.json as the published skills read now. */
export const skillsIndexJob = defineJob({
  name: 'skills-index',
  queue: 'documents',
  payload: z.object({}).strict(),
  run: (ctx) => publishSkillsIndex(ctx),
});
