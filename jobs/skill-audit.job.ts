import { z } from 'zod';
import { defineJob } from './job.js';
import { auditJobId, auditVersion, queueReaudit } from '../src/domain/posts/version-audit.use-cases.js';

/** One version's static audit: queued when a version is created (domain events) and by a re-audit. */
export const skillAuditJob = defineJob({
  name: 'skill-audit',
  queue: 'documents',
  payload: z.object({ postId: z.guid(), version: z.number().int().min(1) }).strict(),
  run: (ctx, { postId, version }) => auditVersion({ ...ctx, baseUrl: ctx.site.baseUrl }, postId, version),
});

/**
 * Re-audits every version not audited under the current rules (after a rule change): queues one
 * skill-audit job per version, reporting its progress ({scanned, total, queued}) on the job.
 */
export const skillAuditAllJob = defineJob({
  name: 'skill-audit-all',
  queue: 'documents',
  payload: z.object({}).strict(),
  run: (ctx) =>
    queueReaudit({
      db: ctx.db,
      progress: ctx.progress,
      queueAudits: (keys) =>
        ctx.enqueueDocuments(
          // Ids of their own: a new version's audit asked for by its event meanwhile keeps its
          // place ahead of the background ones instead of being taken for one of them.
          keys.map((k) => ({ name: skillAuditJob.name, data: k, jobId: `re${auditJobId(k.postId, k.version)}` })),
          { background: true },
        ),
    }),
});
