import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { cacheControlOf, DOCUMENTS } from '../../documents/catalog.js';
import { renderSiteAgentCard, CRAWL_EXTENSION_PATH } from '../../documents/site-agent-card.renderer.js';
import { renderCrawlSpec } from '../../documents/crawl-spec.renderer.js';
import { jsonBytes } from '../../domain/documents/publish-document.js';

const AgentCardSchema = z
  .object({
    protocolVersion: z.string(),
    name: z.string(),
    description: z.string(),
    url: z.string(),
    version: z.string(),
    preferredTransport: z.string(),
    capabilities: z.record(z.string(), z.unknown()),
    securitySchemes: z.record(z.string(), z.unknown()),
    defaultInputModes: z.array(z.string()),
    defaultOutputModes: z.array(z.string()),
    skills: z.array(z.record(z.string(), z.unknown())),
  })
  .loose()
  .describe('A2A v0.3.0 AgentCard (schema: a2a-v0.3.0.schema.json#/definitions/AgentCard)');

/**
 * The site card and crawl spec are bucket objects; these routes answer the same paths with the
 * same renderer when the bucket has not got them yet (first seconds after a fresh start) or when
 * no edge is in front.
 */
export const siteRoutes = (deps: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/.well-known/agent-card.json',
    operationId: 'getSiteAgentCard',
    summary: 'Site-level A2A AgentCard with URL templates for per-agent crawling',
    tags: ['identity'],
    staticDocument: true,
    responses: { 200: { description: 'The site AgentCard', schema: AgentCardSchema } },
    handler: ({ req, res }) => {
      sendCacheable(req, res, {
        body: jsonBytes(renderSiteAgentCard(deps.site)),
        contentType: DOCUMENTS.siteAgentCard.contentType,
        cacheControl: cacheControlOf(DOCUMENTS.siteAgentCard),
      });
    },
  }),
  defineRoute({
    method: 'get',
    path: CRAWL_EXTENSION_PATH,
    operationId: 'getCrawlExtensionSpec',
    summary: 'The crawl extension named by the site AgentCard',
    tags: ['identity'],
    staticDocument: true,
    responses: { 200: { description: 'Extension description', schema: z.record(z.string(), z.unknown()) } },
    handler: ({ req, res }) => {
      sendCacheable(req, res, {
        body: jsonBytes(renderCrawlSpec(deps.site.baseUrl)),
        contentType: DOCUMENTS.spec.contentType,
        cacheControl: cacheControlOf(DOCUMENTS.spec),
      });
    },
  }),
];
