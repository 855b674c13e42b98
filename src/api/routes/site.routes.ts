import type { ApiDeps } from '../deps.js';
import { defineRoute, type ResponseSpec } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { refuseUnsupportedA2AVersion, VERSION_NOT_SUPPORTED_RESPONSE } from '../http/a2a-version.js';
import { siteAgentCardDocument } from '../../documents/site/site-agent-card.document.js';
import { SITE_DOCUMENTS } from '../../documents/catalog.js';
import { siteDocuments } from '../../domain/publishing/publish-site-documents.use-cases.js';

/** How each site document is named in the OpenAPI document, by its catalogue id. */
const OPERATIONS: Readonly<Record<string, { operationId: string; summary: string; description: string }>> = {
  SiteAgentCard: {
    operationId: 'getSiteAgentCard',
    summary:
      'Site-level A2A AgentCard (v1.0 with the v0.3 members, signed) with URL templates for per-agent crawling; an unsupported A2A-Version gets 400 VersionNotSupportedError',
    description: 'The site AgentCard',
  },
  CrawlExtensionSpec: {
    operationId: 'getCrawlExtensionSpec',
    summary: 'The crawl extension named by the site AgentCard',
    description: 'Extension description',
  },
  ScoreMethodology: {
    operationId: 'getSpec_market_score_v1_json',
    summary: 'Score methodology v1: weights, every component, health rules, invariants',
    description: 'The methodology',
  },
  BestPracticesMethodology: {
    operationId: 'getSpec_best_practices_v1_json',
    summary: 'Best-practices methodology v1: the ten items, each with an anchor',
    description: 'The methodology',
  },
  InstallExtensionSpec: {
    operationId: 'getSpec_x_market_install_v1_json',
    summary: 'The x-market-install AgentCard extension',
    description: 'The methodology',
  },
};

/**
 * The site card, the crawl extension and the methodologies are bucket objects; these routes answer
 * the same paths with the same bytes when the bucket has not got them yet (first seconds after a
 * fresh start) or when no edge is in front. They depend only on the site's configuration, so they
 * are rendered once.
 */
export const siteRoutes = (deps: ApiDeps) => {
  const rendered = new Map(siteDocuments(deps.site, deps.receipts).map((d) => [d.document.id, d.body]));
  return SITE_DOCUMENTS.map((document) => {
    const op = OPERATIONS[document.id];
    if (!op) throw new Error(`site document ${document.id} has no operation`);
    return defineRoute({
      method: 'get',
      path: document.path,
      operationId: op.operationId,
      summary: op.summary,
      tags: ['identity'],
      staticDocument: true,
      // The body's schema and content type come from the catalogue (src/api/openapi.ts).
      responses: {
        200: { description: op.description },
        ...((document === siteAgentCardDocument ? { 400: VERSION_NOT_SUPPORTED_RESPONSE } : {}) as Record<
          number,
          ResponseSpec
        >),
      },
      handler: ({ req, res }) => {
        // A request naming an A2A version we do not serve (the edge sends such requests here).
        if (document === siteAgentCardDocument && refuseUnsupportedA2AVersion(req, res)) return;
        const body = rendered.get(document.id);
        if (typeof body !== 'string') throw new Error(`site document ${document.id} was not rendered`);
        sendCacheable(req, res, { body, contentType: document.contentType, cacheControl: document.cacheControl });
      },
    });
  });
};
