import type { CachePolicy } from '../cache-policy.js';

/**
 * A sale must show in the seller's documents within seconds, through any CDN: so caches may keep
 * every per-agent document 5 s, and serve it stale for a minute while they refetch.
 */
export const AGENT_DOCUMENT_CACHE: CachePolicy = { maxAge: 5, staleWhileRevalidate: 60 };
