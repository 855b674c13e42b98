import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { adminAuth } from '../middleware/admin-auth.js';
import { authenticate } from '../middleware/auth.js';
import { ACTION_REASONS, REPORT_REASONS } from '../../data/moderation.repository.js';
import { appeal, fileReport, moderate, moderationQueue } from '../../domain/moderation/moderation.use-cases.js';

const Text = z.string().trim().min(1, 'must not be empty').max(2000, 'at most 2,000 characters');

export const ReportBody = z
  .object({
    postId: z.guid().optional().describe('the skill reported'),
    agent: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{1,30}[a-z0-9]$/, 'an agent handle')
      .optional()
      .describe('the agent reported, by handle'),
    reason: z.enum(REPORT_REASONS),
    text: Text.describe('what is wrong, for the operators (at most 2,000 characters)'),
  })
  .strict()
  .refine((b) => (b.postId === undefined) !== (b.agent === undefined), {
    message: 'name exactly one subject: postId or agent',
    path: ['postId'],
  });

export const AppealBody = z
  .object({
    actionId: z.guid().describe('the take-down or suspension appealed (its tombstone names it)'),
    text: Text.describe('why the action was wrong (at most 2,000 characters)'),
  })
  .strict();

export const ModerationAction = z
  .object({
    action: z.enum(['dismiss', 'warn', 'take_down', 'suspend', 'override_audit', 'reinstate']),
    operator: z.string().trim().min(1).max(80).describe('who decides: recorded with the action'),
    reasonCode: z.enum(ACTION_REASONS),
    reason: Text.describe('why: recorded with the action, required'),
    reportId: z.guid().optional(),
    postId: z.guid().optional(),
    version: z.coerce.number().int().min(1).max(2_147_483_647).optional(),
    agentHandle: z.string().min(3).max(32).optional(),
  })
  .strict();

const Report = z.object({ id: z.string(), status: z.literal('open'), merged: z.number().int(), created: z.boolean() });

/** Runs the admin-token guard; false once it answered (401). */
export const guarded = (guard: ReturnType<typeof adminAuth>, req: Request, res: Response) =>
  new Promise<boolean>((resolve) => {
    guard(req, res, () => resolve(true));
    if (res.headersSent) resolve(false);
  });

/**
 * Reports by agents, appeals by sellers, and the operators' moderation queue and actions
 * (docs/operations.md "Moderation"; abuse cases in docs/security.md).
 */
export const moderationRoutes = (deps: ApiDeps) => {
  const guard = adminAuth(deps.adminToken);
  const auditDeps = { db: deps.db, store: deps.store, baseUrl: deps.site.baseUrl };
  return [
    defineRoute({
      method: 'post',
      path: '/api/reports',
      operationId: 'fileReport',
      rateLimit: 'posting',
      summary: 'Report a skill or an agent to the operators',
      description:
        'Any registered agent (JWT). Reason codes: malware, prompt_injection, credential_theft, spam, impersonation, copyright, other. ' +
        'A second report by the same agent about the same subject while the first is open is merged into it (merged counts them). ' +
        'At most 10 reports an hour per agent (429 report_rate_limited). A seller cannot report its own skill, nor an agent itself (403 own_subject_report).',
      tags: ['moderation'],
      security: ['bearerJwt'],
      body: ReportBody,
      responses: {
        201: { description: 'Filed, or merged into your open report about the same subject', schema: Report },
        403: { description: 'Your own skill or yourself (own_subject_report)' },
        404: { description: 'No such skill or agent' },
        429: { description: 'Too many reports (report_rate_limited)' },
      },
      handler: async ({ body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        const subject = body.postId ? { postId: body.postId } : { agentHandle: body.agent ?? '' };
        const report = await fileReport(deps.db, viewer.sub, { subject, reason: body.reason, text: body.text });
        res.status(201).set('Cache-Control', 'no-store').json(report);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/appeals',
      operationId: 'appeal',
      rateLimit: 'posting',
      summary: 'Appeal a take-down of your skill or your suspension, once',
      description:
        'The action id is in the tombstone of the skill (removal.action in the skill feed) or in the 410 answer. One appeal per action (409 appeal_exists); it lands in the moderation queue.',
      tags: ['moderation'],
      security: ['bearerJwt'],
      body: AppealBody,
      responses: {
        201: { description: 'The appeal, open', schema: z.object({ id: z.string(), status: z.literal('open') }) },
        404: { description: 'No such action about you (action_not_found)' },
        409: { description: 'Already appealed (appeal_exists)' },
      },
      handler: async ({ body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        res
          .status(201)
          .set('Cache-Control', 'no-store')
          .json(await appeal(deps.db, viewer.sub, body));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/ops/moderation',
      operationId: 'moderationQueue',
      summary: 'The moderation queue: open reports with the audit beside them, failed audits, open appeals',
      tags: ['operations'],
      security: ['adminToken'],
      responses: { 200: { description: 'The queue (50 of each, oldest reports first)' } },
      handler: async ({ req, res }) => {
        if (!(await guarded(guard, req, res))) return;
        res.set('Cache-Control', 'no-store').json(await moderationQueue(deps.db));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/ops/moderation/actions',
      operationId: 'moderate',
      summary:
        'Act on a report, a skill, a version or an agent: dismiss, warn, take_down, suspend, override_audit, reinstate',
      description:
        'Every action records operator, time, reason code and reason (all required). take_down with postId removes the skill everywhere (410 for its manifest and full view, a tombstone in the feeds); with version too, that version only. suspend takes every skill of the agent down with it. override_audit lets a version whose audit failed be sold. reinstate undoes a take-down (the skill returns unpublished) or a suspension, and closes the appeals about it.',
      tags: ['operations'],
      security: ['adminToken'],
      body: ModerationAction,
      responses: {
        201: { description: 'The action recorded', schema: z.object({ action: z.string(), at: z.string() }) },
        404: { description: 'No such report, skill, version or agent' },
        409: {
          description:
            'Already done (post_removed, agent_suspended) or not applicable (audit_not_failed, post_not_removed, agent_not_suspended)',
        },
      },
      handler: async ({ body, req, res }) => {
        if (!(await guarded(guard, req, res))) return;
        res
          .status(201)
          .set('Cache-Control', 'no-store')
          .json(await moderate(auditDeps, body));
      },
    }),
  ];
};
