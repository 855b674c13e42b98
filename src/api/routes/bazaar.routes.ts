import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { RenderCache } from '../http/render-cache.js';
import { memoizeFor } from '../../platform/memoize.js';
import { JSON_TYPE } from '../../documents/catalog.js';
import { bazaarVersion, listResources, searchResources } from '../../domain/discovery/bazaar.js';
import { ListQuery, SearchQuery } from '../../domain/discovery/bazaar-params.js';

/**
 * Listings change within a second of the skill or seller they show (the feed indexer's pass), and
 * every answer is public: shared caches may keep one for 30 s, and serve it stale while they ask
 * again. Within the process a page is rendered once per listings version.
 */
const CACHE_CONTROL = 'public, max-age=30, stale-while-revalidate=120';

const Requirements = z.object({
  scheme: z.string(),
  network: z.string(),
  asset: z.string(),
  amount: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.number(),
  extra: z.record(z.string(), z.unknown()),
});
const DiscoveryResource = z.object({
  resource: z
    .string()
    .describe('absolute URL of the paid resource; for an mcp resource, the MCP endpoint naming the skill'),
  type: z.enum(['http', 'mcp']).describe('http: a paid route; mcp: the buy_skill tool of the MCP server'),
  x402Version: z.literal(2),
  accepts: z.array(Requirements).describe('exactly the requirements of the 402 of the resource'),
  lastUpdated: z.string().describe('ISO 8601: when this listing last changed'),
  description: z.string(),
  mimeType: z.string(),
  serviceName: z.string().optional(),
  tags: z.array(z.string()).optional(),
  iconUrl: z.string().optional(),
  extensions: z
    .object({ bazaar: z.record(z.string(), z.unknown()) })
    .describe(
      'bazaar: how to call it (info.input type http with method, or type mcp with tool, inputSchema, transport, example)',
    ),
});
const ResourcesPage = z.object({
  x402Version: z.literal(2),
  items: z.array(DiscoveryResource),
  pagination: z.object({ limit: z.number(), offset: z.number(), total: z.number() }),
});
const SearchPage = z.object({
  x402Version: z.literal(2),
  resources: z.array(DiscoveryResource),
  partialResults: z.boolean().optional().describe('true when more skills matched than a search ranks'),
  pagination: z.object({ limit: z.number(), cursor: z.string().nullable() }),
});

/**
 * The x402 v2 Bazaar discovery API over this marketplace's own catalogue, in the shapes the
 * official client (`withBazaar` of @x402/extensions) reads: point its facilitator URL at this
 * service. Filters beyond the Bazaar: category, health, minBuyers, maxPrice (docs/discovery.md).
 */
export const bazaarRoutes = (deps: ApiDeps) => {
  const pages = new RenderCache(30_000, 16 * 1024 * 1024);
  const version = memoizeFor(200, () => bazaarVersion(deps.db));
  const render = async (kind: string, query: object, compute: () => Promise<unknown>) =>
    pages.get(`${kind}:${await version()}:${JSON.stringify(query)}`, async () => JSON.stringify(await compute()));
  return [
    defineRoute({
      method: 'get',
      path: '/discovery/resources',
      operationId: 'bazaarResources',
      summary: 'x402 Bazaar discovery: the paid resources (published paid skills and the registration)',
      description:
        'The x402 v2 Bazaar list, as `withBazaar(new HTTPFacilitatorClient({ url }))` reads it. Each item states its resource exactly as its 402 does (accepts, description, service metadata, extensions.bazaar). The registration comes first, then skills most recently changed first, each as an http resource (its paid full view) and an mcp resource (the buy_skill tool, keyed by URL and tool); `type` keeps one kind. Beyond the Bazaar: category, health, minBuyers, maxPrice.',
      tags: ['discovery'],
      query: ListQuery,
      responses: { 200: { description: 'A page of resources', schema: ResourcesPage } },
      handler: async ({ query, req, res }) => {
        const page = await render('list', query, () => listResources(deps.db, deps.site, query));
        sendCacheable(req, res, {
          body: page.body,
          etag: page.etag,
          contentType: JSON_TYPE,
          cacheControl: CACHE_CONTROL,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/discovery/search',
      operationId: 'bazaarSearch',
      rateLimit: 'search',
      summary: 'x402 Bazaar discovery: search the paid resources',
      description:
        'Skills whose title, tags or preview match the query (full text, typos corrected), best first, with the filters of /discovery/resources; the registration when the query asks for it. Continue with cursor = pagination.cursor until it is null.',
      tags: ['discovery'],
      query: SearchQuery,
      responses: { 200: { description: 'Matching resources, best first', schema: SearchPage } },
      handler: async ({ query, req, res }) => {
        const page = await render('search', query, () => searchResources(deps.db, deps.site, query));
        sendCacheable(req, res, {
          body: page.body,
          etag: page.etag,
          contentType: JSON_TYPE,
          cacheControl: CACHE_CONTROL,
        });
      },
    }),
  ];
};
