import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';

const CheckSchema = z.object({ status: z.enum(['ok', 'failed']), ms: z.number(), error: z.string().optional() });
const ReadySchema = z.object({ status: z.enum(['ready', 'not_ready']), checks: z.record(z.string(), CheckSchema) });

const CHECK_TIMEOUT_MS = 2000;

async function timed(check: () => Promise<void>) {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { status: 'ok' as const, ms: Math.round(performance.now() - started) };
  } catch (err) {
    return { status: 'failed' as const, ms: Math.round(performance.now() - started), error: (err as Error).message };
  } finally {
    clearTimeout(timer);
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
    summary: 'Readiness: database, Redis, bucket and chain all answer',
    tags: ['operations'],
    responses: {
      200: { description: 'Every dependency answered', schema: ReadySchema },
      503: { description: 'At least one dependency failed', schema: ReadySchema },
    },
    handler: async ({ res }) => {
      const results = await Promise.all(deps.readiness.map(async (c) => [c.name, await timed(c.check)] as const));
      const ready = results.every(([, r]) => r.status === 'ok');
      res
        .status(ready ? 200 : 503)
        .set('Cache-Control', 'no-store')
        .json({ status: ready ? 'ready' : 'not_ready', checks: Object.fromEntries(results) });
    },
  }),
];
