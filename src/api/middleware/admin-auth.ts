import { createHmac } from 'node:crypto';
import express, { type Request, type RequestHandler, type Response, Router } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { sendProblem } from '../http/problem.js';
import { clientKey } from './rate-limit.js';
import { presentsAdminToken, sameSecret } from '../../platform/admin-token.js';
import { DependencyUnavailableError } from '../../platform/errors.js';
import { escapeHtml } from '../../documents/html.js';
import { QUEUE_RETRY_AFTER_SECONDS, queueReady, queuesAnswer, type Queues } from '../../platform/queues.js';

/**
 * Guards operator pages with the admin token, given as `Authorization: Bearer <token>` (scripts)
 * or as the password of HTTP Basic auth (a browser prompts for it; the user name is ignored).
 */
export function adminAuth(token: string): RequestHandler {
  return (req, res, next) => {
    if (presentsAdminToken(req.get('authorization'), token)) return next();
    res.set('WWW-Authenticate', 'Basic realm="skill-market operators", charset="UTF-8"');
    sendProblem(res, 401, 'admin_token_required', 'This page needs the admin token (Bearer, or Basic password)');
  };
}

/** The dashboard's session cookie: sent back only to the dashboard's own paths. */
export const DASHBOARD_COOKIE = 'skill_market_dashboard';
/** How long a dashboard sign-in lasts. */
export const DASHBOARD_SESSION_SECONDS = 8 * 3600;
/** Wrong tokens a client may post per window before the form refuses it for the rest of the window. */
export const SIGN_IN_FAILURES = { points: 5, windowSeconds: 15 * 60 } as const;
const SIGN_IN_PATH = '/sign-in';

/**
 * A session's cookie value: its expiry and an HMAC of it keyed by the admin token. The token
 * itself never leaves the form post; a stolen cookie opens the dashboard only (its path), only
 * until it expires, and stops working as soon as the token changes.
 */
export function dashboardSession(token: string, expiresAt: number): string {
  const mac = createHmac('sha256', token).update(`dashboard-session:${expiresAt}`).digest('base64url');
  return `${expiresAt}.${mac}`;
}

function validSession(cookieHeader: string | undefined, token: string, now: number): boolean {
  const value = (cookieHeader ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${DASHBOARD_COOKIE}=`))
    ?.slice(DASHBOARD_COOKIE.length + 1);
  const expiresAt = Number(value?.split('.')[0]);
  if (!value || !Number.isSafeInteger(expiresAt) || expiresAt <= now) return false;
  return sameSecret(value, dashboardSession(token, expiresAt));
}

/** The sign-in form: one field for the admin token, and why the last try failed. */
function signInPage(action: string, error?: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Sign in · Queue dashboard · Skill Market</title>
<link rel="icon" href="data:,">
<style>body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa}main{max-width:420px;margin:10vh auto;padding:24px;background:#fff;border:1px solid #d0d7de;border-radius:8px}h1{font-size:22px;margin:0 0 12px}label{display:block;margin:12px 0 4px}input{width:100%;box-sizing:border-box;padding:8px;font:inherit;border:1px solid #d0d7de;border-radius:6px}button{margin-top:12px;padding:8px 16px;font:inherit;border:1px solid #1f883d;border-radius:6px;background:#1f883d;color:#fff;cursor:pointer}.error{color:#cf222e}.muted{color:#59636e;font-size:14px}</style>
</head><body><main>
<h1>Queue dashboard</h1>
<p class="muted">Operators only: sign in with the admin token (<code>ADMIN_TOKEN</code>, or the one the start-up log line names).</p>
${error ? `<p class="error" id="sign-in-error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${escapeHtml(action)}">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form></main></body></html>
`;
}

function sendForm(res: Response, status: number, action: string, error?: string) {
  res
    .status(status)
    .set('Cache-Control', 'no-store')
    // The dashboard's no-referrer policy would make the form's post say Origin: null.
    .set('Referrer-Policy', 'same-origin')
    // A scheme browsers do not prompt for: the form is the prompt.
    .set('WWW-Authenticate', 'FormBased realm="skill-market operators"')
    .type('text/html; charset=utf-8')
    .send(signInPage(action, error));
}

/** A browser asking for a page: it prefers HTML to JSON. */
const wantsPage = (req: Request) =>
  req.method === 'GET' && req.accepts(['application/json', 'text/html']) === 'text/html';

/**
 * Whether a form post comes from this site's own page: a cross-site page cannot make a browser
 * post here (the cookie is SameSite=Strict besides). Browsers say where a request comes from in
 * Sec-Fetch-Site, or else in Origin (the form page's Referrer-Policy keeps it from being "null");
 * a client that sends neither is not a browser, and has nothing to forge.
 */
function sameOrigin(req: Request): boolean {
  const site = req.get('sec-fetch-site');
  if (site) return site === 'same-origin' || site === 'none';
  const origin = req.get('origin');
  return origin === undefined || origin === `${req.protocol}://${req.get('host')}`;
}

/**
 * Guards the queue dashboard (mounted at its path). Scripts keep the admin token as Bearer or as
 * the Basic password; a browser without one gets a sign-in form instead of a Basic prompt. Posting
 * the right token sets an HttpOnly, SameSite=Strict session cookie scoped to the dashboard's path
 * (Secure over https) and redirects to the dashboard; a wrong one shows the form again with the
 * error. Wrong tokens are limited per client (SIGN_IN_FAILURES, counted in this process).
 */
export function dashboardAuth(token: string, now: () => number = Date.now): Router {
  const failures = new RateLimiterMemory({
    points: SIGN_IN_FAILURES.points,
    duration: SIGN_IN_FAILURES.windowSeconds,
  });
  const router = Router();
  router.post(SIGN_IN_PATH, express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    const action = `${req.baseUrl}${SIGN_IN_PATH}`;
    if (!sameOrigin(req))
      return sendProblem(res, 403, 'cross_site_sign_in', 'The sign-in form is accepted only from this site');
    const key = clientKey(req.ip);
    const seen = await failures.get(key);
    if (seen && seen.consumedPoints >= SIGN_IN_FAILURES.points) {
      const wait = Math.ceil(seen.msBeforeNext / 1000);
      res.set('Retry-After', String(wait));
      return sendForm(res, 429, action, `Too many wrong tokens: try again in ${Math.ceil(wait / 60)} minutes.`);
    }
    const presented = typeof req.body?.token === 'string' ? req.body.token.trim() : '';
    if (presented === '' || !sameSecret(presented, token)) {
      await failures.consume(key).catch((err: unknown) => {
        if (!(err instanceof RateLimiterRes)) throw err;
      });
      return sendForm(res, 401, action, 'That is not the admin token.');
    }
    await failures.delete(key);
    const expiresAt = Math.floor(now() / 1000) + DASHBOARD_SESSION_SECONDS;
    res.cookie(DASHBOARD_COOKIE, dashboardSession(token, expiresAt), {
      httpOnly: true,
      sameSite: 'strict',
      secure: req.secure,
      path: req.baseUrl,
      maxAge: DASHBOARD_SESSION_SECONDS * 1000,
    });
    res.set('Cache-Control', 'no-store').redirect(303, `${req.baseUrl}/`);
  });
  router.use((req, res, next) => {
    if (presentsAdminToken(req.get('authorization'), token)) return next();
    if (validSession(req.get('cookie'), token, Math.floor(now() / 1000))) return next();
    if (wantsPage(req)) return sendForm(res, 401, `${req.baseUrl}${SIGN_IN_PATH}`);
    res.set('WWW-Authenticate', 'Basic realm="skill-market operators", charset="UTF-8"');
    sendProblem(res, 401, 'admin_token_required', 'This page needs the admin token (Bearer, or Basic password)');
  });
  return router;
}

/** How long the dashboard guard waits for Redis to answer a PING. */
export const DASHBOARD_PROBE_TIMEOUT_MS = 500;

/**
 * Guards the queue dashboard: every answer it gives needs Redis, so while Redis is not ready, or
 * does not answer a PING within DASHBOARD_PROBE_TIMEOUT_MS, the page answers 503
 * dependency_unavailable with Retry-After at once (through the error handler) instead of the
 * dashboard's own 500s after its commands time out. Mounted after adminAuth, so only operators
 * learn that Redis is down.
 */
export function requireQueues(queues: Queues): RequestHandler {
  const all = Object.values(queues);
  return async (_req, _res, next) => {
    if (all.every(queueReady) && (await queuesAnswer(all, DASHBOARD_PROBE_TIMEOUT_MS))) return next();
    next(new DependencyUnavailableError('job queue (Redis)', QUEUE_RETRY_AFTER_SECONDS));
  };
}
