import { cacheControl, type CachePolicy } from './cache-policy.js';

/**
 * Every crawlable document the workers publish to the bucket. A document's key is its public
 * path without the leading slash, so a CDN in front of the bucket serves it at the seed's path.
 */
export interface DocumentKind {
  contentType: string;
  cache: CachePolicy;
}

export const JSON_TYPE = 'application/json; charset=utf-8';

export const DOCUMENTS = {
  siteAgentCard: { contentType: JSON_TYPE, cache: { maxAge: 300, staleWhileRevalidate: 86_400 } },
  spec: { contentType: JSON_TYPE, cache: { maxAge: 3600, staleWhileRevalidate: 86_400 } },
  postManifest: { contentType: JSON_TYPE, cache: { maxAge: 60, staleWhileRevalidate: 600 } },
} satisfies Record<string, DocumentKind>;

export const SITE_AGENT_CARD_KEY = '.well-known/agent-card.json';

export const postManifestKey = (postId: string) => `api/posts/${postId}/manifest.json`;

export const cacheControlOf = (kind: DocumentKind) => cacheControl(kind.cache);

/**
 * Public paths that are bucket objects when requested without a query string. The edge (and a
 * CDN configured from infra/) sends these to the bucket; everything else goes to the API.
 */
export const STATIC_PATH_PATTERNS: RegExp[] = [
  /^\/\.well-known\/agent-card\.json$/,
  /^\/spec\/[a-z0-9-]{1,64}\.json$/,
  /^\/api\/discovery\/[a-z-]{1,64}\.json$/,
  /^\/api\/discovery\/tags$/,
  // Handles are 3 to 32 characters: a longer name cannot be an agent's, so the bucket is not asked.
  /^\/api\/agents\/[a-z0-9-]{3,32}\/(agent-card\.json|identity|card|badge\.svg|health\.json|similar\.json|reputation\.json|score\.json|best-practices\.json)$/,
  /^\/api\/posts\/[0-9a-f-]{36}\/manifest\.json$/,
];

export const isStaticPath = (path: string) => STATIC_PATH_PATTERNS.some((re) => re.test(path));

/** Public path of a bucket key. */
export const pathOfKey = (key: string) => `/${key}`;
export const keyOfPath = (path: string) => path.replace(/^\/+/, '');
