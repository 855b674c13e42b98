import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../../platform/logger.js';
import type { Metrics } from '../../platform/metrics.js';

/** A caller's own request id is kept when it is a plain token; anything else is replaced. */
const CALLER_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * One structured log line and one latency observation per request, labelled by route template.
 * Every request gets an id (the caller's X-Request-Id when sane), echoed in X-Request-Id and named
 * in its log lines and in a 500's problem body, so a report can be matched to its log.
 */
export function requestLog(log: Logger, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const given = req.get('x-request-id');
    const requestId = given && CALLER_ID.test(given) ? given : randomUUID();
    res.locals.requestId = requestId;
    res.set('X-Request-Id', requestId);
    res.on('finish', () => {
      const ms = performance.now() - started;
      const route: string = res.locals.route ?? (req.route?.path as string | undefined) ?? 'unmatched';
      metrics.httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, ms / 1000);
      const line = {
        requestId,
        method: req.method,
        url: req.originalUrl,
        route,
        status: res.statusCode,
        ms: Math.round(ms * 100) / 100,
      };
      if (res.statusCode >= 500) log.error(line, 'request');
      else log.info(line, 'request');
    });
    next();
  };
}
