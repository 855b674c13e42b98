import { z } from 'zod';
import { bulkhead, BulkheadRejectedError, isTaskCancelledError } from 'cockatiel';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { RenderCache, type Rendered } from '../http/render-cache.js';
import { memoizeFor } from '../../platform/memoize.js';
import { agentFeed, latestFeedVersions, postFeed } from '../../domain/discovery/feeds.js';
import { jsonBytes } from '../../domain/publishing/publish-document.js';
import { JSON_TYPE } from '../../documents/catalog.js';
import { agentFeedDocument } from '../../documents/discovery/feeds.document.js';
import { trendingDocument as trendingEntry } from '../../documents/discovery/rankings.document.js';
import { search, type SearchFilter, type SearchType } from '../../domain/discovery/search.js';
import { TAG_WEIGHTS, TAG_WINDOW_DAYS, TRENDING_WINDOW_HOURS } from '../../domain/discovery/rankings.js';
import { ServiceUnavailableError } from '../../platform/errors.js';
import {
  categoriesDocument,
  tagsDocument,
  trendingDocument,
  FEED_DEFAULT_LIMIT,
  CATEGORIES_DEFAULT,
} from '../../domain/discovery/documents.js';
import { IsoDateTime } from '../../domain/shared-schemas.js';
import { SearchAnswer } from '@skill-market/skill-protocol/responses';

const DateTime = IsoDateTime;
/**
 * The delta-pollable feeds (docs/decisions/0004-delta-feeds.md). Walk pages with `cursor` until
 * `nextCursor` is null, then poll with `since` = the last `nextSince`: every change arrives once.
 */
const Page = z.object({
  items: z.array(z.record(z.string(), z.unknown())),
  nextCursor: z.string().nullable().describe('pass as cursor for the next page; null at the end'),
  nextSince: z.string().nullable().describe('after the last page, poll with since set to this'),
  hasMore: z.boolean(),
});
// Pages with a query string are cached as the published default forms are (the catalogue's policies).
const FEED_CACHE = agentFeedDocument.cacheControl;
const booleanParam = z.enum(['true', 'false']).transform((v) => v === 'true');

const Doc = z.record(z.string(), z.unknown());
const RANKING_CACHE = trendingEntry.cacheControl;

/**
 * Feed pages are rendered once per process per data version: the version is the newest feed time
 * of the kind (read at most every 200 ms), so a page never outlives the change that moves an item
 * out of it. Every change to a field an item shows moves the item (a new version), so a page is
 * exact for its version (docs/decisions/0009-feed-items-never-change-in-place.md).
 */
function feedPages(deps: ApiDeps) {
  const cache = new RenderCache(30_000);
  const version = memoizeFor(200, () => latestFeedVersions(deps.db));
  return async (kind: 'agent' | 'post', query: object, render: () => Promise<unknown>) => {
    const key = `${kind}:${(await version())[kind]}:${JSON.stringify(query)}`;
    return cache.get(key, async () => JSON.stringify(await render()));
  };
}

/**
 * Searches this process computes at once (SEARCH_CONCURRENCY); the others wait in arrival order,
 * up to SEARCH_QUEUE_MAX and for at most SEARCH_QUEUE_WAIT_MS, and beyond that get 503 with
 * Retry-After (counted in searches_shed_total). With 16 searches each on its own connection,
 * PostgreSQL shares its cores among 16 backends and every search takes as long as its cost times
 * the crowd: the costliest set the p99. Taken in turn, a search waits for the work ahead of it and
 * then runs at full speed (on 2 cores, 4 at once: p99 45 ms against 55 ms, and 20% more searches a
 * second; docs/discovery.md).
 */
function searchSlots(deps: ApiDeps) {
  const slots = bulkhead(deps.config.searchConcurrency, deps.config.searchQueueMax);
  return <T>(compute: () => Promise<T>): Promise<T> => {
    // A free slot: run now (no timer for the common case).
    if (slots.executionSlots > 0) return slots.execute(compute);
    return new Promise<T>((resolve, reject) => {
      // 'waiting' until a slot takes it, 'running' then, 'answered' once it was rejected.
      let state: 'waiting' | 'running' | 'answered' = 'waiting';
      const shed = (reason: 'queue_full' | 'waited_too_long') => {
        state = 'answered';
        deps.metrics.searchesShed.inc({ reason });
        reject(new ServiceUnavailableError('Too many searches are waiting; try again shortly', 1, 'search_busy'));
      };
      const deadline = AbortSignal.timeout(deps.config.searchQueueWaitMs);
      // Still waiting when the deadline passes: answered now, and skipped when its turn comes.
      deadline.addEventListener('abort', () => state === 'waiting' && shed('waited_too_long'), { once: true });
      slots
        .execute(() => {
          state = 'running';
          return compute();
        }, deadline)
        .then(resolve, (err: unknown) => {
          if (err instanceof BulkheadRejectedError) shed('queue_full');
          else if (!isTaskCancelledError(err)) reject(err); // cancelled at its turn: the deadline answered it
        });
    });
  };
}

/** What a search may ask for, the same wherever it comes from (the search API, MCP's search_skills). */
export const SearchText = z.string().trim().min(2, 'must be at least 2 characters').max(200);
export const SEARCH_LIMIT_MAX = 50;

/** A search answer (docs/discovery.md, "Search"), as its clients read it too. */
export const SearchAnswerBody = SearchAnswer;

/** A search answer as sent (JSON bytes and their ETag), for the search API, the search page and MCP. */
export type Searching = (q: string, type: SearchType, limit: number, filter?: SearchFilter) => Promise<Rendered>;

const services = new WeakMap<ApiDeps, Searching>();

/**
 * Searches computed in turn (searchSlots) and kept 30 s per process: one per app (per `deps`,
 * whoever asks first), shared by the search API, the search page and MCP's search_skills, so a
 * query is computed once whichever of them asks, and no caller gets slots or a cache of its own.
 */
export function searchService(deps: ApiDeps): Searching {
  const known = services.get(deps);
  if (known) return known;
  const searches = new RenderCache(30_000, 32 * 1024 * 1024);
  const inTurn = searchSlots(deps);
  const searching: Searching = (q, type, limit, filter = {}) =>
    searches.get(`${type}|${limit}|${filter.audit ?? ''}|${filter.sort ?? ''}|${q}`, async () =>
      jsonBytes(await inTurn(() => search(deps.db, deps.site, q, type, limit, filter))).toString(),
    );
  services.set(deps, searching);
  return searching;
}

export const discoveryRoutes = (deps: ApiDeps, searching: Searching = searchService(deps)) => {
  const feedPage = feedPages(deps);
  return [
    defineRoute({
      method: 'get',
      path: '/api/discovery/trending.json',
      operationId: 'trendingAgents',
      summary: `Trending agents: ${TRENDING_WINDOW_HOURS}-hour sales velocity weighted by the Wilson lower bound (z = 1.96) of buyer diversity`,
      description: 'trendScore = (sales72h / 72) x wilsonLower(distinct buyers, sales). Recomputed every 15 minutes.',
      tags: ['discovery'],
      staticDocument: true,
      responses: { 200: { description: 'Ranked agents', schema: Doc } },
      handler: async ({ req, res }) => {
        const body = await trendingDocument(deps.db);
        sendCacheable(req, res, { body: jsonBytes(body), contentType: JSON_TYPE, cacheControl: RANKING_CACHE });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/discovery/tags',
      operationId: 'trendingTags',
      summary: `Trending tags over ${TAG_WINDOW_DAYS} days, weighted by paid intent`,
      description: `score7d = ${TAG_WEIGHTS.paidPurchase} per paid purchase of a skill with the tag + ${TAG_WEIGHTS.published} per skill with the tag published in the window (free reads are not recorded).`,
      tags: ['discovery'],
      staticDocument: true,
      responses: { 200: { description: 'Ranked tags', schema: Doc } },
      handler: async ({ req, res }) => {
        const body = await tagsDocument(deps.db);
        sendCacheable(req, res, { body: jsonBytes(body), contentType: JSON_TYPE, cacheControl: RANKING_CACHE });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/discovery/categories.json',
      operationId: 'categories',
      summary: 'OASF skill and domain category index with counts of published skills and agents',
      description:
        'depth 1..4 (default 2); kind all (default), skills, domains or tags. OASF is three levels deep; depth=4 adds under every category the five tags most used by skills tagged with it.',
      tags: ['discovery'],
      staticDocument: true,
      query: z.object({
        depth: z.coerce.number().int().min(1).max(4).default(CATEGORIES_DEFAULT.depth),
        kind: z.enum(['all', 'skills', 'domains', 'tags']).default(CATEGORIES_DEFAULT.kind),
      }),
      responses: { 200: { description: 'Category trees', schema: Doc } },
      handler: async ({ query, req, res }) => {
        const body = await categoriesDocument(deps.db, query.depth, query.kind);
        sendCacheable(req, res, { body: jsonBytes(body), contentType: JSON_TYPE, cacheControl: RANKING_CACHE });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/discovery/search',
      operationId: 'search',
      rateLimit: 'search',
      summary: 'Search agents, skills and tags (full text with typo tolerance), ranked, with highlights',
      tags: ['discovery'],
      query: z.object({
        q: SearchText,
        type: z.enum(['all', 'agents', 'posts', 'tags']).default('all'),
        limit: z.coerce.number().int().min(1).max(SEARCH_LIMIT_MAX).default(20),
        audit: z
          .enum(['pass'])
          .optional()
          .describe('pass: only skills whose current version passed its audit (docs/audit.md)'),
        sort: z
          .enum(['relevance', 'rating'])
          .default('relevance')
          .describe(
            'rating: the best matches ordered by their Bayesian-adjusted rating by verified buyers (docs/reputation.md), relevance breaking ties; unrated skills last',
          ),
      }),
      responses: {
        200: {
          description:
            'Results, best first; each skill with its audit verdict; highlight marks matches with <mark>; didYouMean gives the query as corrected when a word was not known',
          schema: SearchAnswerBody,
        },
        503: {
          description: 'Too many searches waiting in this process (search_busy); retry after Retry-After seconds',
        },
      },
      handler: async ({ query, req, res }) => {
        // Answers are public and declared fresh for 30 s: a popular query is computed once per
        // process per 30 s, as a CDN in front would do per edge.
        const page = await searching(query.q, query.type, query.limit, {
          ...(query.audit ? { audit: query.audit } : {}),
          ...(query.sort === 'rating' ? { sort: 'rating' as const } : {}),
        });
        sendCacheable(req, res, {
          body: page.body,
          etag: page.etag,
          contentType: JSON_TYPE,
          cacheControl: 'public, max-age=30, stale-while-revalidate=120',
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/discovery/agents.json',
      operationId: 'agentFeed',
      staticDocument: true,
      summary: 'Delta-pollable agent feed, enriched with score and health (and rank, with sort=top)',
      description:
        'sort=updated (default): agents in the order they changed, after max(since, cursor); pages of `limit` (default 50). ' +
        'sort=top: the top agents by score (optionally among those changed since `since`); no cursor. verified=true keeps agents with an ERC-8004 identity.',
      tags: ['discovery'],
      query: z
        .object({
          since: DateTime.optional(),
          cursor: DateTime.optional(),
          verified: booleanParam.optional(),
          sort: z.enum(['top', 'updated']).default('updated'),
          limit: z.coerce.number().int().min(1).max(200).default(FEED_DEFAULT_LIMIT),
        })
        .refine((q) => !(q.sort === 'top' && q.cursor), {
          path: ['cursor'],
          message: 'cursor pages sort=updated; sort=top is a ranking',
        }),
      responses: { 200: { description: 'A page of the feed', schema: Page } },
      handler: async ({ query, req, res }) => {
        // Compact JSON: a 200-item page is a quarter of a megabyte pretty-printed.
        const page = await feedPage('agent', query, () => agentFeed(deps.db, deps.site, query));
        sendCacheable(req, res, { body: page.body, etag: page.etag, contentType: JSON_TYPE, cacheControl: FEED_CACHE });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/discovery/posts.json',
      operationId: 'postFeed',
      staticDocument: true,
      summary: 'Delta-pollable skill feed (published and unpublished skills; drafts never)',
      tags: ['discovery'],
      query: z.object({
        since: DateTime.optional(),
        cursor: DateTime.optional(),
        limit: z.coerce.number().int().min(1).max(200).default(FEED_DEFAULT_LIMIT),
      }),
      responses: { 200: { description: 'A page of the feed', schema: Page } },
      handler: async ({ query, req, res }) => {
        const page = await feedPage('post', query, () => postFeed(deps.db, deps.site, query));
        sendCacheable(req, res, { body: page.body, etag: page.etag, contentType: JSON_TYPE, cacheControl: FEED_CACHE });
      },
    }),
  ];
};
