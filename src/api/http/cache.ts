import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';

// The policy belongs to the documents (the bucket objects carry it too); routes take it from here
// with the rest of the HTTP cache helpers.
export { cacheControl, type CachePolicy } from '../../documents/cache-policy.js';

/** Strong ETag of a body: a short, stable digest. */
export function etagOf(body: Buffer | string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** RFC 9110 If-None-Match: a list of entity tags or `*`, compared weakly. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === bare);
}

export interface CacheableBody {
  body: Buffer | string;
  contentType: string;
  cacheControl: string;
  etag?: string;
  lastModified?: Date;
}

/**
 * Sends a read-only document the way every public read is sent: CORS-open, cacheable, with an
 * ETag, and 304 Not Modified when the client already has it. The edge (bucket objects) and the
 * API (parameterized renders) both answer through here, so they carry the same headers.
 */
export function sendCacheable(req: Request, res: Response, doc: CacheableBody): void {
  const etag = doc.etag || etagOf(doc.body);
  res.set({
    'Access-Control-Allow-Origin': '*',
    'Cache-Control': doc.cacheControl,
    ETag: etag,
    'Content-Type': doc.contentType,
    Vary: 'Accept-Encoding',
  });
  if (doc.lastModified) res.set('Last-Modified', doc.lastModified.toUTCString());
  if (matchesIfNoneMatch(req.get('if-none-match'), etag)) {
    res.status(304).end();
    return;
  }
  res.status(200).send(Buffer.isBuffer(doc.body) ? doc.body : Buffer.from(doc.body));
}

const ALLOWED_HEADERS =
  'Authorization, Content-Type, If-None-Match, X-PAYMENT, PAYMENT-SIGNATURE, SIGN-IN-WITH-X, X-Request-Id';
// What a browser x402 client reads: the challenge, the settlement responses (with their receipt),
// the payment's id and a facilitator's extension responses.
const EXPOSED_HEADERS =
  'ETag, Retry-After, X-PAYMENT-RESPONSE, PAYMENT-RESPONSE, PAYMENT-REQUIRED, X-Payment-Id, EXTENSION-RESPONSES, Location, Allow, X-Request-Id, RateLimit-Policy, RateLimit';

/**
 * CORS for everyone: agents call us from anywhere, we use bearer tokens (never cookies), so a
 * wildcard origin gives away nothing. Preflights are answered here.
 */
export const cors: RequestHandler = (req, res, next) => {
  res.set('Access-Control-Allow-Origin', '*');
  res.set('Access-Control-Expose-Headers', EXPOSED_HEADERS);
  if (req.method === 'OPTIONS') {
    res.set({
      'Access-Control-Allow-Methods': 'GET, HEAD, POST, PATCH, DELETE, OPTIONS',
      'Access-Control-Allow-Headers': ALLOWED_HEADERS,
      'Access-Control-Max-Age': '86400',
    });
    res.status(204).end();
    return;
  }
  next();
};

/**
 * Sends a bucket object the way the edge serves it: the headers the workers stored with it, the
 * headers its catalogue entry always carries (the embed card's framing policy), plus ETag, CORS and
 * 304. The edge and the API's document routes both answer through here, so the same object never
 * gets two sets of headers.
 */
export function sendStoredObject(
  req: Request,
  res: Response,
  object: { body: Buffer; contentType: string; cacheControl?: string; etag: string; lastModified?: Date },
  documentHeaders: Readonly<Record<string, string>> = {},
): void {
  res.set(documentHeaders);
  sendCacheable(req, res, {
    body: object.body,
    contentType: object.contentType,
    cacheControl: object.cacheControl ?? 'public, max-age=60',
    etag: object.etag,
    lastModified: object.lastModified,
  });
}
