import express, { type Express, type RequestHandler } from 'express';
import helmet from 'helmet';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { ApiDeps } from './deps.js';
import { defineRoute, toHandler, type AnyRoute } from './http/route.js';
import { cors } from './http/cache.js';
import { errorHandler, notFoundHandler } from './http/problem.js';
import { methodNotAllowed } from './http/method-not-allowed.js';
import { edge } from './middleware/edge.js';
import { requestLog } from './middleware/request-log.js';
import { dashboardAuth, requireQueues } from './middleware/admin-auth.js';
import { buildOpenApi } from './openapi.js';
import { healthRoutes } from './routes/health.routes.js';
import { siteRoutes } from './routes/site.routes.js';
import { devRoutes } from './routes/dev.routes.js';
import { opsRoutes, OpenApiSchema } from './routes/ops.routes.js';
import { moderationRoutes } from './routes/moderation.routes.js';
import { reviewRoutes } from './routes/reviews.routes.js';
import { refundRoutes } from './routes/refunds.routes.js';
import { webhookRoutes } from './routes/webhooks.routes.js';
import { MODERATION_PAGE_PATH, moderationPage } from './routes/moderation-page.js';
import { identityRoutes } from './routes/identity.routes.js';
import { paymentRoutes } from './routes/payments.routes.js';
import { postRoutes } from './routes/posts.routes.js';
import { agentDocumentRoutes } from './routes/agent-documents.routes.js';
import { discoveryRoutes, searchService } from './routes/discovery.routes.js';
import { pageNotFound, pageRoutes } from './routes/pages.routes.js';
import { skillsIndexRoutes } from './routes/skills-index.routes.js';
import { bazaarRoutes } from './routes/bazaar.routes.js';
import { x402Discovery } from './routes/x402-well-known.routes.js';
import { mcpRoutes } from './routes/mcp.routes.js';
import { analyticsRoutes, analyticsSignIn, analyticsSignOut } from './routes/analytics.routes.js';

export const DASHBOARD_PATH = '/admin/queues';

/** Every route the API serves, in mount order; /openapi.json describes exactly this list. */
export function apiRoutes(deps: ApiDeps): AnyRoute[] {
  let openapi: ReturnType<typeof buildOpenApi> | undefined;
  const x402 = x402Discovery(deps);
  const searching = searchService(deps);
  const openapiRoute = defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This OpenAPI document',
    tags: ['operations'],
    responses: { 200: { description: 'OpenAPI 3.1', schema: OpenApiSchema } },
    // x402 crawlers read the ownership proofs here first (`x-discovery`); sellers add theirs when
    // publishing. The API's description does not wait on the database: without it, no proofs.
    handler: async ({ res }) => {
      const discovery = await x402.xDiscovery().catch((err: unknown) => {
        deps.log.warn({ err }, 'openapi.json served without x-discovery: the ownership proofs could not be read');
        return undefined;
      });
      const body = JSON.stringify({ ...openapi, ...(discovery ? { 'x-discovery': discovery } : {}) });
      res.set('Cache-Control', 'public, max-age=300').type('application/json').send(body);
    },
  });
  const routes: AnyRoute[] = [
    ...healthRoutes(deps),
    ...siteRoutes(deps),
    ...identityRoutes(deps),
    ...paymentRoutes(deps),
    ...postRoutes(deps),
    ...agentDocumentRoutes(deps),
    ...discoveryRoutes(deps, searching),
    ...pageRoutes(deps, searching),
    ...skillsIndexRoutes(deps),
    ...bazaarRoutes(deps),
    ...mcpRoutes(deps),
    ...x402.routes,
    ...opsRoutes(deps),
    ...moderationRoutes(deps),
    ...reviewRoutes(deps),
    ...refundRoutes(deps),
    ...webhookRoutes(deps),
    ...analyticsRoutes(deps),
    ...devRoutes(deps),
    openapiRoute,
  ];
  openapi = buildOpenApi(routes, deps.site.baseUrl);
  return routes;
}

/**
 * Security headers on every answer (helmet). Public documents are read cross-origin and badges
 * are embedded as images on other sites, so resources are `cross-origin`; framing is refused by
 * CSP `frame-ancestors 'none'` except for the embed card, which sends its own policy. The queue
 * dashboard is a script app of its own: a policy of its own (same-origin resources only), and
 * X-Frame-Options DENY.
 */
function securityHeaders(): RequestHandler {
  const common = {
    crossOriginResourcePolicy: { policy: 'cross-origin' as const },
    crossOriginEmbedderPolicy: false,
    frameguard: false as const,
  };
  const api = helmet({
    ...common,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        styleSrc: ["'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        frameAncestors: ["'none'"],
      },
    },
  });
  // Basic auth is remembered by browsers: the dashboard must not be framed by another site
  // (clickjacking). Its page asks a third-party font host for its typeface, a stylesheet that
  // holds the page's first paint where that host cannot be reached and tells the host who opens
  // the dashboard: only its own scripts, styles and fonts load, and it falls back to system fonts.
  const dashboard = helmet({
    ...common,
    frameguard: { action: 'deny' },
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        fontSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
  });
  return (req, res, next) => (req.path.startsWith(DASHBOARD_PATH) ? dashboard(req, res, next) : api(req, res, next));
}

/** Builds the Express app; listening and shutdown live in server.ts. */
export function buildApp(deps: ApiDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  // ETags are ours (sendCacheable); Express's weak ETags would disagree with the edge's.
  app.set('etag', false);
  app.set('trust proxy', deps.config.trustProxy);

  app.use(securityHeaders());
  app.use(cors);
  app.use(requestLog(deps.log, deps.metrics));
  if (deps.config.serveBucket) app.use(edge({ store: deps.store, log: deps.log, ttlMs: 1000 }));
  app.use(express.json({ limit: deps.config.bodyLimit, type: ['application/json', 'application/*+json'] }));

  const dashboard = new ExpressAdapter();
  dashboard.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: Object.values(deps.queues).map((q) => new BullMQAdapter(q)), serverAdapter: dashboard });
  app.use(DASHBOARD_PATH, dashboardAuth(deps.adminToken), requireQueues(deps.queues), dashboard.getRouter());
  app.use(MODERATION_PAGE_PATH, moderationPage(deps));
  app.use('/agents/:handle/analytics/sign-in', analyticsSignIn(deps));
  app.use('/agents/:handle/analytics/sign-out', analyticsSignOut(deps));

  const routes = apiRoutes(deps);
  for (const route of routes) {
    if (route.path === DASHBOARD_PATH) continue;
    const limit = route.rateLimit ? [deps.rateLimits.middleware(route.rateLimit)] : [];
    app[route.method](route.path, ...limit, toHandler(route));
  }

  app.use(methodNotAllowed(routes.filter((r) => r.path !== DASHBOARD_PATH)));
  app.use(pageNotFound);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.log, deps.config.bodyLimit));
  return app;
}
