import type { RequestHandler } from 'express';
import type { Logger } from '../../platform/logger.js';
import type { Metrics } from '../../platform/metrics.js';

/** One structured log line and one latency observation per request, labelled by route template. */
export function requestLog(log: Logger, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.on('finish', () => {
      const ms = performance.now() - started;
      const route: string = res.locals.route ?? (req.route?.path as string | undefined) ?? 'unmatched';
      metrics.httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, ms / 1000);
      const line = { method: req.method, url: req.originalUrl, route, status: res.statusCode, ms: Math.round(ms * 100) / 100 };
      if (res.statusCode >= 500) log.error(line, 'request');
      else log.info(line, 'request');
    });
    next();
  };
}
