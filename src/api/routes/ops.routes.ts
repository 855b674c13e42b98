import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { adminAuth } from '../middleware/admin-auth.js';

/** Operator routes: Prometheus metrics behind the admin token. The queue dashboard is mounted in app.ts. */
export const opsRoutes = (deps: ApiDeps) => {
  const guard = adminAuth(deps.adminToken);
  return [
    defineRoute({
      method: 'get',
      path: '/metrics',
      operationId: 'metrics',
      summary: 'Prometheus metrics: request latency, queue depth, job durations and failures',
      tags: ['operations'],
      security: ['adminToken'],
      responses: {
        200: { description: 'Prometheus text exposition format', contentType: 'text/plain; version=0.0.4' },
      },
      handler: async ({ req, res }) => {
        await new Promise<void>((resolve) => guard(req, res, () => resolve()));
        if (res.headersSent) return;
        res.set('Content-Type', deps.metrics.registry.contentType).set('Cache-Control', 'no-store');
        res.send(await deps.metrics.registry.metrics());
      },
    }),
    defineRoute({
      method: 'get',
      path: '/admin/queues',
      operationId: 'queueDashboard',
      summary: 'BullMQ dashboard (HTML) for every queue; its assets and API live below this path',
      description:
        'The admin token as Bearer or as the Basic password (scripts), or a session cookie: a browser without either gets a sign-in form (401, HTML) that posts the token to /admin/queues/sign-in, which sets an HttpOnly, SameSite=Strict cookie scoped to /admin/queues (Secure over https) and redirects here. Wrong tokens are limited per client (429 with Retry-After); a sign-in posted from another site is refused (403 cross_site_sign_in).',
      tags: ['operations'],
      security: ['adminToken'],
      responses: { 200: { description: 'The dashboard page', contentType: 'text/html' } },
      // Served by @bull-board/express, mounted in app.ts; this entry documents it.
      handler: ({ res }) => {
        res.status(404).end();
      },
    }),
  ];
};

export const OpenApiSchema = z.record(z.string(), z.unknown()).describe('OpenAPI 3.1 document');
