import type { CachePolicy } from '../cache-policy.js';

/** Methodologies and extension descriptions change with a release, not with the data. */
export const SPEC_CACHE: CachePolicy = { maxAge: 3600, staleWhileRevalidate: 86_400 };
