import type { CachePolicy } from '../cache-policy.js';

/** Feeds change with every indexed change. */
export const FEED_CACHE: CachePolicy = { maxAge: 5, staleWhileRevalidate: 30 };
/** Rankings are recomputed every 15 minutes. */
export const RANKING_CACHE: CachePolicy = { maxAge: 60, staleWhileRevalidate: 600 };
