import type { RequestHandler } from 'express';
import { sendProblem } from '../http/problem.js';
import { presentsAdminToken } from '../../platform/admin-token.js';
import { DependencyUnavailableError } from '../../platform/errors.js';
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
