import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { withTimeout } from '../../platform/timeout.js';
import { presentsAdminToken } from '../../platform/admin-token.js';

const CheckSchema = z.object({
  status: z.enum(['ok', 'failed']),
  ms: z.number(),
  error: z
    .string()
    .optional()
    .describe(
      'why the check failed: only with the admin token, as it may name hosts, URLs and their keys (RPC, facilitator, database, Redis)',
    ),
});
const ReadySchema = z.object({
  status: z
    .enum(['ready', 'degraded', 'not_ready'])
    .describe(
      'not_ready only when a check this process cannot serve without fails (the database); degraded when another one does',
    ),
  checks: z.record(z.string(), CheckSchema.extend({ required: z.boolean() })),
});

const CHECK_TIMEOUT_MS = 2000;

async function timed(check: () => Promise<void>) {
  const started = performance.now();
  try {
    await withTimeout(check(), CHECK_TIMEOUT_MS, 'the check');
    return { status: 'ok' as const, ms: Math.round(performance.now() - started) };
  } catch (err) {
    return { status: 'failed' as const, ms: Math.round(performance.now() - started), error: (err as Error).message };
  }
}

export const healthRoutes = (deps: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/healthz',
    operationId: 'liveness',
    summary: 'Liveness: the process is up and serving',
    tags: ['operations'],
    responses: { 200: { description: 'Alive', schema: z.object({ status: z.literal('ok') }) } },
    handler: ({ res }) => {
      res.set('Cache-Control', 'no-store').json({ status: 'ok' });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/readyz',
    operationId: 'readiness',
    summary: 'Readiness: database, Redis, bucket and chain; 503 only when the database fails',
    description:
      'Every replica shares Redis, the bucket and the chain, so taking replicas out of a load balancer for them would take the whole ' +
      'site down while reads still work: they make the answer `degraded` (200). Only the database, which nearly every answer needs, makes it 503. ' +
      'Anyone sees each check by name, status and time; why a check failed only with the admin token (Authorization: Bearer or the Basic password).',
    tags: ['operations'],
    responses: {
      200: { description: 'The database answered (status ready, or degraded naming what failed)', schema: ReadySchema },
      503: { description: 'The database failed', schema: ReadySchema },
    },
    handler: async ({ req, res }) => {
      // An error's text names what failed to answer, often with its URL (an RPC URL holds its API key).
      const operator = presentsAdminToken(req.get('authorization'), deps.adminToken);
      const results = await Promise.all(
        deps.readiness.map(async (c) => {
          const { error, ...result } = await timed(c.check);
          return [
            c.name,
            { ...result, ...(operator && error ? { error } : {}), required: Boolean(c.required) },
          ] as const;
        }),
      );
      const failed = results.filter(([, r]) => r.status === 'failed');
      const status = failed.some(([, r]) => r.required) ? 'not_ready' : failed.length ? 'degraded' : 'ready';
      res
        .status(status === 'not_ready' ? 503 : 200)
        .set('Cache-Control', 'no-store')
        .json({ status, checks: Object.fromEntries(results) });
    },
  }),
];
