import { timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { sendProblem } from '../http/problem.js';
import { DependencyUnavailableError } from '../../platform/errors.js';
import { QUEUE_RETRY_AFTER_SECONDS, queueReady, queuesAnswer, type Queues } from '../../platform/queues.js';

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Guards operator pages with the admin token, given as `Authorization: Bearer <token>` (scripts)
 * or as the password of HTTP Basic auth (a browser prompts for it; the user name is ignored).
 */
export function adminAuth(token: string): RequestHandler {
  return (req, res, next) => {
    const header = req.get('authorization') ?? '';
    const [scheme = '', value = ''] = header.split(' ', 2);
    let presented = '';
    if (/^bearer$/i.test(scheme)) presented = value;
    else if (/^basic$/i.test(scheme)) {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      presented = decoded.slice(decoded.indexOf(':') + 1);
    }
    if (presented && same(presented, token)) return next();
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
