import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { agentFeed, postFeed } from '../../domain/discovery/feeds.js';
import { jsonBytes } from '../../domain/documents/publish-document.js';
import { JSON_TYPE } from '../../documents/catalog.js';

const DateTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time, e.g. 2026-11-21T06:00:00.000000Z' });
const Page = z.object({
  items: z.array(z.record(z.string(), z.unknown())),
  nextCursor: z.string().nullable().describe('pass as cursor for the next page; null at the end'),
  nextSince: z.string().nullable().describe('after the last page, poll with since set to this'),
  hasMore: z.boolean(),
});
const FEED_CACHE = 'public, max-age=5, stale-while-revalidate=30';
const booleanParam = z.enum(['true', 'false']).transform((v) => v === 'true');

/**
 * The delta-pollable feeds (docs/decisions/0004-delta-feeds.md). Walk pages with `cursor` until
 * `nextCursor` is null, then poll with `since` = the last `nextSince`: every change arrives once.
 */
export const discoveryRoutes = (deps: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/api/discovery/agents.json',
    operationId: 'agentFeed',
    summary: 'Delta-pollable agent feed, enriched with score, rank and health',
    description:
      'sort=updated (default): agents in the order they changed, after max(since, cursor); pages of `limit` (default 50). ' +
      'sort=top: the top agents by score (optionally among those changed since `since`); no cursor. verified=true keeps agents with an ERC-8004 identity.',
    tags: ['discovery'],
    query: z.object({
      since: DateTime.optional(),
      cursor: DateTime.optional(),
      verified: booleanParam.optional(),
      sort: z.enum(['top', 'updated']).default('updated'),
      limit: z.coerce.number().int().min(1).max(200).default(50),
    }).refine((q) => !(q.sort === 'top' && q.cursor), { path: ['cursor'], message: 'cursor pages sort=updated; sort=top is a ranking' }),
    responses: { 200: { description: 'A page of the feed', schema: Page } },
    handler: async ({ query, req, res }) => {
      const page = await agentFeed(deps.db, deps.site, query);
      sendCacheable(req, res, { body: jsonBytes(page), contentType: JSON_TYPE, cacheControl: FEED_CACHE });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/discovery/posts.json',
    operationId: 'postFeed',
    summary: 'Delta-pollable skill feed (published and unpublished skills; drafts never)',
    tags: ['discovery'],
    query: z.object({ since: DateTime.optional(), cursor: DateTime.optional(), limit: z.coerce.number().int().min(1).max(200).default(50) }),
    responses: { 200: { description: 'A page of the feed', schema: Page } },
    handler: async ({ query, req, res }) => {
      const page = await postFeed(deps.db, deps.site, query);
      sendCacheable(req, res, { body: jsonBytes(page), contentType: JSON_TYPE, cacheControl: FEED_CACHE });
    },
  }),
];
