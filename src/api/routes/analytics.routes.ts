import express, { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import type { Source } from '../../data/analytics.repository.js';
import { AnalyticsDocument } from '../../domain/analytics/analytics-document.js';
import { readAgentAnalytics } from '../../domain/analytics/analytics.use-cases.js';
import { sourceOf } from '../../domain/analytics/sources.js';
import { disabledEndpoints } from '../../domain/webhooks/webhooks.use-cases.js';
import type { AgentClaims } from '../../domain/identity/jwt.js';
import {
  analyticsPagePath,
  renderAnalyticsPage,
  renderAnalyticsSignIn,
} from '../../documents/pages/analytics-page.renderer.js';
import { PAGE_HEADERS, renderMessagePage } from '../../documents/pages/layout.js';
import { AppError, ForbiddenError, NotFoundError, UnauthorizedError } from '../../platform/errors.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { sendProblem } from '../http/problem.js';
import { postedFromThisSite } from '../http/same-origin.js';
import { authenticate } from '../middleware/auth.js';
import { wantsPage } from './pages.routes.js';

/** The dashboard session cookie: a dashboard-only session token, readable by no script and sent to the dashboard only. */
export const ANALYTICS_COOKIE = 'sm_analytics';
/** Private to the agent: no shared cache keeps it, and a browser asks again each time. */
const PRIVATE = 'private, no-cache';
const HTML_TYPE = 'text/html; charset=utf-8';

/** The host of each PUBLIC_BASE_URL seen, parsed once (requestSource runs on the paid path). */
const siteHosts = new Map<string, string>();

/** The referrer source of an HTTP request (docs/analytics.md#referrer-sources). */
export function requestSource(deps: ApiDeps, req: Request): Source {
  const base = deps.site.baseUrl;
  let siteHost = siteHosts.get(base);
  if (siteHost === undefined) {
    siteHost = new URL(base).host;
    siteHosts.set(base, siteHost);
  }
  const referer = req.get('referer');
  if (!referer) return 'direct';
  return sourceOf({ transport: 'http', referer, siteHosts: [siteHost, req.get('host') ?? ''] });
}

/**
 * The scope of the session the sign-in form opens: a token for the dashboard only (the API's
 * routes refuse it), expiring with the agent token it was opened with, in 8 hours at the latest.
 */
const DASHBOARD_SCOPE = 'dashboard';
const DASHBOARD_SESSION_MS = 8 * 3_600_000;

/** The agent of a dashboard request: its Bearer agent token, else its session cookie's token. */
function dashboardViewer(deps: ApiDeps, req: Request): AgentClaims | undefined {
  if (req.get('authorization')) return authenticate(req, deps.jwt, true);
  const cookie = (req.get('cookie') ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${ANALYTICS_COOKIE}=`));
  const token = cookie?.slice(ANALYTICS_COOKIE.length + 1);
  if (!token) return undefined;
  try {
    return deps.jwt.verify(decodeURIComponent(token), DASHBOARD_SCOPE);
  } catch {
    // An expired or foreign token in the cookie: sign in again.
    return undefined;
  }
}

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set(PAGE_HEADERS).set('Cache-Control', 'private, no-store').type(HTML_TYPE).send(html);
}

const Handle = z.object({ handle: z.string().max(200).describe('agent handle') });

/** The seller's analytics: the JSON document for its token, and the dashboard page for its browser. */
export function analyticsRoutes(deps: ApiDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/agents/me/analytics',
      operationId: 'getMyAnalytics',
      summary:
        "The signed-in agent's seller analytics (private): funnel per skill, revenue and sales per day, buyers, referrers, ratings",
      description:
        'Precomputed by the agent-analytics job within seconds of a sale, refund or review, and of the counters being flushed. ' +
        'Sales, revenue, refunds and buyers are exact (the ledger); views, challenges and deliveries approximate (docs/analytics.md). ' +
        'Only the agent itself reads it: there is no way to name another agent.',
      tags: ['agents'],
      security: ['bearerJwt'],
      responses: {
        200: {
          description: 'The analytics document',
          schema: AnalyticsDocument,
          headers: { 'Cache-Control': 'private, no-cache' },
        },
        401: { description: 'No or an invalid agent token (token_missing, token_invalid)' },
      },
      handler: async ({ req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        const doc = await readAgentAnalytics(deps.db, viewer.sub);
        if (!doc) throw new UnauthorizedError('The agent of this token no longer exists', 'token_invalid');
        res.status(200).set('Cache-Control', PRIVATE).set('Vary', 'Authorization').json(doc);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/agents/:handle/analytics',
      operationId: 'getAnalyticsPage',
      summary: "The seller dashboard (HTML, private): the agent's analytics with server-drawn charts",
      description:
        "Behind the agent's sign-in: its token as Bearer, or the session cookie the sign-in form sets. Without either, 401 with the sign-in form; another agent's token, 403.",
      tags: ['pages'],
      security: ['bearerJwt'],
      params: Handle,
      responses: {
        200: { description: 'The dashboard', contentType: 'text/html' },
        401: {
          description:
            'Not signed in: the sign-in form for a browser (Accept prefers text/html), problem+json token_missing otherwise',
        },
        403: {
          description: 'Signed in as another agent: a page for a browser, problem+json not_your_analytics otherwise',
        },
      },
      handler: async ({ params, req, res }) => {
        const handle = params.handle.toLowerCase();
        const viewer = dashboardViewer(deps, req);
        // A client that does not prefer a page (a script, a crawler) gets problem+json, as on every page.
        if (!wantsPage(req) && (!viewer || viewer.handle !== handle))
          return viewer
            ? sendProblem(res, 403, 'not_your_analytics', `This token is ${viewer.handle}'s, not ${handle}'s`)
            : sendProblem(res, 401, 'token_missing', 'Sign in with the agent token (Authorization: Bearer)');
        if (!viewer) return sendPage(res, 401, renderAnalyticsSignIn(handle));
        if (viewer.handle !== handle)
          return sendPage(
            res,
            403,
            renderMessagePage(
              'Not your dashboard',
              `You are signed in as ${viewer.handle}; this dashboard is another agent's.`,
            ),
          );
        const doc = await readAgentAnalytics(deps.db, viewer.sub);
        if (!doc) return sendPage(res, 401, renderAnalyticsSignIn(handle, 'That agent no longer exists.'));
        sendPage(
          res,
          200,
          renderAnalyticsPage(doc, { disabledEndpoints: await disabledEndpoints(deps.db, viewer.sub) }),
        );
      },
    }),
  ];
}

/** The dashboard's session cookie, or its removal (an empty value, expired). */
function sessionCookie(req: Request, deps: ApiDeps, path: string, value: string): string {
  // Secure whenever the public site is https, also behind a TLS terminator that speaks http to us.
  const secure = req.protocol === 'https' || deps.site.baseUrl.startsWith('https:') ? '; Secure' : '';
  const expiry = value ? '' : '; Max-Age=0';
  return `${ANALYTICS_COOKIE}=${value}; Path=${path}; HttpOnly; SameSite=Strict${secure}${expiry}`;
}

/**
 * The dashboard's sign-out form post: the session cookie is removed and the browser sent back to
 * the sign-in form. Posted from this site only, like the sign-in.
 */
export function analyticsSignOut(deps: ApiDeps): Router {
  const router = Router({ mergeParams: true });
  router.post('/', (req, res) => {
    const handle = String((req.params as { handle?: string }).handle ?? '').toLowerCase();
    if (!/^[a-z0-9-]{3,32}$/.test(handle)) return sendProblem(res, 404, 'agent_not_found', `Agent ${handle}`);
    if (!postedFromThisSite(req, new URL(deps.site.baseUrl).origin))
      return sendProblem(res, 403, 'cross_site_sign_in', 'The sign-out form must be posted from this site');
    const path = analyticsPagePath(handle);
    res
      .status(303)
      .set('Set-Cookie', sessionCookie(req, deps, path, ''))
      .set('Location', path)
      .set('Cache-Control', 'no-store')
      .end();
  });
  return router;
}

/**
 * The dashboard's sign-in form post (a browser form, so not JSON and not in the OpenAPI routes):
 * a valid token of this very agent sets the session cookie (HttpOnly, SameSite=Strict, scoped to
 * the dashboard's path, Secure over https) and redirects to the dashboard. The cookie holds a
 * session token for the dashboard only (DASHBOARD_SCOPE), never the agent token pasted.
 */
export function analyticsSignIn(deps: ApiDeps): Router {
  const router = Router({ mergeParams: true });
  router.post('/', express.urlencoded({ extended: false, limit: '8kb' }), (req, res, next) => {
    try {
      const handle = String((req.params as { handle?: string }).handle ?? '').toLowerCase();
      if (!/^[a-z0-9-]{3,32}$/.test(handle)) throw new NotFoundError(`Agent ${handle}`, 'agent_not_found');
      // SameSite=Strict keeps the cookie off other sites' requests; this keeps another site from
      // signing a browser in as someone else (login CSRF).
      if (!postedFromThisSite(req, new URL(deps.site.baseUrl).origin))
        return sendProblem(res, 403, 'cross_site_sign_in', 'The sign-in form must be posted from this site');
      const token = typeof req.body?.token === 'string' ? req.body.token.trim() : '';
      let viewer: AgentClaims;
      try {
        viewer = deps.jwt.verify(token);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        return sendPage(
          res,
          401,
          renderAnalyticsSignIn(handle, 'That is not a valid agent token (it may have expired).'),
        );
      }
      if (viewer.handle !== handle)
        throw new ForbiddenError(`This token is ${viewer.handle}'s, not ${handle}'s`, 'not_your_analytics');
      const path = analyticsPagePath(handle);
      const expiresAt = new Date(Math.min(deps.jwt.expiryOf(token).getTime(), Date.now() + DASHBOARD_SESSION_MS));
      const session = deps.jwt.sign(viewer, { name: DASHBOARD_SCOPE, expiresAt }).token;
      res
        .status(303)
        .set('Set-Cookie', sessionCookie(req, deps, path, encodeURIComponent(session)))
        .set('Location', path)
        .set('Cache-Control', 'no-store')
        .end();
    } catch (err) {
      next(err);
    }
  });
  return router;
}
