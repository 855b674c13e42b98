import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { cacheControl, sendCacheable } from '../http/cache.js';
import { cacheControlOf, DOCUMENTS } from '../../documents/catalog.js';
import { BADGE_KINDS, BADGE_STYLES } from '../../documents/agent/badge.renderer.js';
import { EMBED_CARD_CSP } from '../../documents/agent/embed-card.renderer.js';
import { renderBestPracticesSpec, renderInstallExtensionSpec, renderScoreSpec } from '../../documents/spec.renderer.js';
import { AGENT_DOCUMENT_KINDS, agentDocumentKey, renderAgentDocuments, renderBadgeFor, type AgentDocumentName } from '../../domain/agents/agent-documents.js';
import { jsonBytes } from '../../domain/documents/publish-document.js';
import { NotFoundError } from '../../platform/errors.js';

const Handle = z.object({ handle: z.string().max(64).describe('agent handle') });
const Doc = z.record(z.string(), z.unknown());

const DESCRIPTIONS: Record<Exclude<AgentDocumentName, 'badge.svg'>, { summary: string; contentType?: string }> = {
  'agent-card.json': { summary: 'Per-agent A2A v0.3 AgentCard (securitySchemes x402 and bearer JWT, skills from published posts, x-market-install)' },
  identity: { summary: 'ERC-8004 identity resolution: token, owner, agentWallet, tokenURI, registration file and its problems, payout match' },
  card: { summary: 'HTML embed card, safe in iframes (no script, escaped text, CSP allows framing)', contentType: 'text/html' },
  'health.json': { summary: 'Health snapshot: healthy, degraded or dormant, with the reasons' },
  'similar.json': { summary: 'Similar agents (IDF-weighted Jaccard over tags and OASF categories, buyer-overlap fallback)' },
  'reputation.json': { summary: 'Array of SimulatedEvent: what would be posted to the ERC-8004 Reputation Registry for each settled sale (Phase 1 mirror)' },
  'score.json': { summary: 'Score document (methodology /spec/market-score-v1.json)' },
  'best-practices.json': { summary: 'Best-practices checklist (methodology /spec/best-practices-v1.json)' },
};

/**
 * Per-agent documents are bucket objects written by the agent-documents job. These routes answer
 * the same paths when the bucket has not got one yet (a new agent) with the same renderer, and
 * the badge for any kind and style.
 */
export const agentDocumentRoutes = (deps: ApiDeps): AnyRoute[] => {
  const docsDeps = { db: deps.db, site: deps.site, chain: deps.chain };
  const findAgent = async (handle: string) => {
    const agent = await deps.db.selectFrom('agents').selectAll().where('handle', '=', handle.toLowerCase()).executeTakeFirst();
    if (!agent) throw new NotFoundError(`Agent @${handle}`, 'agent_not_found');
    return agent;
  };
  const documentRoutes = (Object.keys(DESCRIPTIONS) as Array<keyof typeof DESCRIPTIONS>).map((name) =>
    defineRoute({
      method: 'get',
      path: `/api/agents/:handle/${name}`,
      operationId: `getAgent_${name.replace(/[^a-z]/gi, '_')}`,
      summary: DESCRIPTIONS[name].summary,
      tags: ['agents'],
      staticDocument: true,
      params: Handle,
      responses: {
        200: DESCRIPTIONS[name].contentType ? { description: 'The document', contentType: DESCRIPTIONS[name].contentType } : { description: 'The document', schema: name === 'reputation.json' ? z.array(Doc) : Doc },
        404: { description: 'Unknown agent (problem+json)' },
      },
      handler: async ({ params, req, res }) => {
        const agent = await findAgent(params.handle);
        const { documents } = await renderAgentDocuments(docsDeps, agent);
        const doc = documents.find((d) => d.key === agentDocumentKey(agent.handle, name))!;
        if (name === 'card') res.set({ 'Content-Security-Policy': EMBED_CARD_CSP, 'X-Content-Type-Options': 'nosniff' });
        sendCacheable(req, res, { body: typeof doc.body === 'string' ? doc.body : await doc.body(), contentType: doc.kind.contentType, cacheControl: cacheControlOf(doc.kind) });
      },
    }),
  );
  const badge = defineRoute({
    method: 'get',
    path: '/api/agents/:handle/badge.svg',
    operationId: 'getAgentBadge',
    summary: 'SVG badge for READMEs: kind earnings (default), buyers, skills or verified; style flat (default) or for-the-badge',
    tags: ['agents'],
    staticDocument: true,
    params: Handle,
    query: z.object({ kind: z.enum(BADGE_KINDS).default('earnings'), style: z.enum(BADGE_STYLES).default('flat') }),
    responses: { 200: { description: 'SVG', contentType: 'image/svg+xml' }, 404: { description: 'Unknown agent' } },
    handler: async ({ params, query, req, res }) => {
      const agent = await findAgent(params.handle);
      const svg = await renderBadgeFor(docsDeps, agent, query.kind, query.style);
      sendCacheable(req, res, { body: svg, contentType: AGENT_DOCUMENT_KINDS.svg.contentType, cacheControl: cacheControl(AGENT_DOCUMENT_KINDS.svg.cache) });
    },
  });
  const specs: Array<[string, string, (base: string) => unknown]> = [
    ['/spec/market-score-v1.json', 'Score methodology v1: weights, every component, health rules, invariants', renderScoreSpec],
    ['/spec/best-practices-v1.json', 'Best-practices methodology v1: the ten items, each with an anchor', renderBestPracticesSpec],
    ['/spec/x-market-install-v1.json', 'The x-market-install AgentCard extension', renderInstallExtensionSpec],
  ];
  const specRoutes = specs.map(([path, summary, render]) =>
    defineRoute({
      method: 'get',
      path,
      operationId: `getSpec_${path.slice(6).replace(/[^a-z0-9]/gi, '_')}`,
      summary,
      tags: ['identity'],
      staticDocument: true,
      responses: { 200: { description: 'The methodology', schema: Doc } },
      handler: ({ req, res }) => {
        sendCacheable(req, res, { body: jsonBytes(render(deps.site.baseUrl)), contentType: DOCUMENTS.spec.contentType, cacheControl: cacheControlOf(DOCUMENTS.spec) });
      },
    }),
  );
  return [...documentRoutes, badge, ...specRoutes];
};
