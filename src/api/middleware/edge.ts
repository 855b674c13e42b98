import type { RequestHandler } from 'express';
import { documentAtPath, keyOfPath } from '../../documents/catalog.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { sharedReads } from '../../platform/shared-reads.js';
import type { Logger } from '../../platform/logger.js';
import { sendStoredObject } from '../http/cache.js';
import { A2A_VERSION_HEADER, a2aVersionSupported } from '../http/a2a-version.js';

export interface EdgeOptions {
  store: ObjectStore;
  log: Logger;
  /** How long this process keeps a fetched object before asking the bucket again (a CDN's TTL, small). */
  ttlMs: number;
  maxEntries?: number;
  /** The clock the TTL is measured with (tests pass their own). */
  now?: () => number;
}

/**
 * The embedded CDN: answers GET/HEAD for the catalogue's document paths (src/documents/catalog.ts)
 * without a query string from the bucket, with the headers the workers stored (Content-Type, Cache-Control) plus ETag, CORS and
 * 304. A path not in the bucket (not published yet) falls through to the API's own route.
 */
export function edge(opts: EdgeOptions): RequestHandler {
  // One bucket fetch per key at a time, reused for the TTL: a burst of reads of one document (a
  // crawler fan-out, a badge on a busy page) waits for the fetch under way instead of starting its own.
  const lookup = sharedReads((key) => opts.store.get(key), {
    ttlMs: opts.ttlMs,
    maxEntries: opts.maxEntries,
    now: opts.now,
  });
  return async (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const document = documentAtPath(req.path);
    // Like infra/edge/edge.conf: a query string, or an A2A-Version the cards do not serve, goes to the
    // API's route (which answers the latter with VersionNotSupportedError). This edge keeps bucket
    // objects only, never the API's answers, so nothing cached can answer such a request in its place
    // (edge.conf bypasses its response cache for them).
    if (!document || req.originalUrl.includes('?') || !a2aVersionSupported(req.get(A2A_VERSION_HEADER))) return next();
    try {
      const object = await lookup(keyOfPath(req.path));
      if (!object) return next();
      res.locals.route = 'edge';
      sendStoredObject(req, res, object, document.headers);
    } catch (err) {
      // The bucket being down must not take the API's own answer away.
      opts.log.warn({ err, path: req.path }, 'edge lookup failed; falling through to the API');
      next();
    }
  };
}
