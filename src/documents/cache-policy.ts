/** How long caches may keep a document and serve it stale while they refetch. */
export interface CachePolicy {
  maxAge: number;
  staleWhileRevalidate: number;
}

/**
 * The Cache-Control value of a policy. One function for the bucket objects (set when a document
 * is published) and the API's answers, so a document reads the same from either.
 */
export const cacheControl = (p: CachePolicy) =>
  `public, max-age=${p.maxAge}, stale-while-revalidate=${p.staleWhileRevalidate}`;
