import { z } from 'zod';
import type { Request, Response } from 'express';
import type { ApiDeps } from '../deps.js';
import { defineRoute, type AnyRoute, type ResponseSpec } from '../http/route.js';
import { sendCacheable, sendStoredObject } from '../http/cache.js';
import { refuseUnsupportedA2AVersion, VERSION_NOT_SUPPORTED_RESPONSE } from '../http/a2a-version.js';
import {
  AGENT_DOCUMENTS,
  AGENT_DOCUMENT_NAMES,
  agentDocumentKey,
  type AgentDocumentName,
} from '../../documents/catalog.js';
import { BADGE_KINDS, BADGE_STYLES } from '../../documents/agent/badge.renderer.js';
import { DocumentNotReadyError, readBadge } from '../../domain/agents/agent-document-reads.js';
import { findAgentByHandleAnyCase } from '../../data/agents.repository.js';
import type { Agent } from '../../data/schema.js';
import { DependencyUnavailableError, NotFoundError } from '../../platform/errors.js';
import type { StoredObject } from '../../platform/object-store.js';
import { sharedReads } from '../../platform/shared-reads.js';
import { withTimeout } from '../../platform/timeout.js';
import { slotId } from '../../platform/queues.js';

/** `/api/agents/{handle}/x` (the catalogue's template) as Express writes it: `/api/agents/:handle/x`. */
const expressPath = (template: string) => template.replace(/\{(\w+)\}/g, ':$1');

const Handle = z.object({ handle: z.string().max(64).describe('agent handle') });

/** What the OpenAPI document says of each; path, content type and schema come from the catalogue. */
const DESCRIPTIONS: Record<Exclude<AgentDocumentName, 'badge.svg'>, { summary: string }> = {
  'agent-card.json': {
    summary:
      'Per-agent A2A AgentCard (v1.0 with the v0.3 members, signed; skills from published posts, x-market-install); an unsupported A2A-Version gets 400 VersionNotSupportedError',
  },
  identity: {
    summary:
      'ERC-8004 identity resolution: token, owner, agentWallet, tokenURI, registration file and its problems, payout match',
  },
  card: {
    summary: 'HTML embed card, safe in iframes (no script, escaped text, CSP allows framing)',
  },
  'health.json': { summary: 'Health snapshot: healthy, degraded or dormant, with the reasons' },
  'similar.json': {
    summary: 'Similar agents (IDF-weighted Jaccard over tags and OASF categories, buyer-overlap fallback)',
  },
  'reputation.json': {
    summary:
      'Array of events, newest first: reviews, responses, revocations, refund requests and outcomes, ERC-8004 feedback given on chain with its verification (simulated: false), and for each settled sale the feedback it would carry (simulated: true)',
  },
  'rating.json': {
    summary:
      'Rating as a seller by verified buyers (count, mean, distribution, Bayesian-adjusted) and refunds (rate, median response time)',
  },
  'score.json': { summary: 'Score document (methodology /spec/market-score-v1.json)' },
  'best-practices.json': { summary: 'Best-practices checklist (methodology /spec/best-practices-v1.json)' },
};

const NOT_FOUND = {
  description:
    'Unknown agent (agent_not_found), or its documents are not published yet (document_not_ready: asked for, retry after Retry-After seconds); problem+json',
};
const BUCKET_DOWN = {
  description: 'The bucket cannot be read right now (dependency_unavailable); problem+json with Retry-After',
};

/** A recompute takes about a second; a client told to wait this long finds the document. */
const NOT_READY_RETRY_AFTER_SECONDS = 2;
/** The longest a request waits for Redis to take the recompute before it answers without it. */
const QUEUE_WAIT_MS = 500;
/** Queue calls one process leaves outstanding while Redis does not answer, at most (then it stops asking). */
const QUEUE_CALLS_OUTSTANDING_MAX = 256;
/** How long this process reuses a bucket answer: the edge's TTL, so both serve the same copy. */
const OBJECT_TTL_MS = 1000;

/**
 * Per-agent documents are bucket objects written by the agent-documents job; the edge (or CDN)
 * serves them at their paths without a query string. These routes answer every other request for
 * them (a query string, no edge in front, a CDN that sends misses here) from the same objects with
 * the edge's headers, and badges of other kinds and styles from the figures the job stored. A
 * request never renders from the facts: that refreshes similarity rows and the identity cache,
 * reads the chain and fetches the agent's registration file, and concurrent renders of one agent
 * would race on those rows. Before the first publication the answer is 404 document_not_ready, and the agent's
 * recompute is queued (one job per agent per minute, whatever the number of requests).
 */
export const agentDocumentRoutes = (deps: ApiDeps): AnyRoute[] => {
  // A burst of reads with distinct query strings (each a CDN miss) costs one bucket GET, not one each.
  const objectAt = sharedReads((key) => deps.store.get(key), { ttlMs: OBJECT_TTL_MS });
  const queueing = new Map<string, Promise<unknown>>();
  const findAgent = async (handle: string) => {
    const agent = await findAgentByHandleAnyCase(deps.db, handle);
    if (!agent) throw new NotFoundError(`Agent @${handle}`, 'agent_not_found');
    return agent;
  };

  /**
   * Queues the agent's recompute, waiting for Redis at most QUEUE_WAIT_MS: with Redis down the
   * request is still answered at once, and the event that created the agent has queued one anyway.
   * A call Redis has not answered is not repeated for the same job id, and past a bound none is
   * made, so a hung Redis cannot make reads pile up commands.
   */
  const queueRecompute = async (agent: Agent) => {
    const jobId = slotId(`agent-documents-${agent.id}-read`, new Date());
    let call = queueing.get(jobId);
    if (!call) {
      if (queueing.size >= QUEUE_CALLS_OUTSTANDING_MAX) return;
      // republish: the object may be gone while its bookkeeping row remains, which a plain recompute would skip as unchanged.
      call = deps.queues.documents
        .add('agent-documents', { agentId: agent.id, republish: true }, { jobId })
        .finally(() => queueing.delete(jobId));
      // Settled long after its request may have been answered: its failure was logged then, or is moot.
      call.catch(() => undefined);
      queueing.set(jobId, call);
    }
    try {
      await withTimeout(call, QUEUE_WAIT_MS, 'queueing the recompute');
    } catch (err) {
      deps.log.warn(
        { err, agent: agent.handle, jobId },
        'could not queue the recompute of an unpublished agent in time; answered without it',
      );
    }
  };

  const notReady = async (res: Response, agent: Agent, name: AgentDocumentName): Promise<never> => {
    await queueRecompute(agent);
    res.set('Retry-After', String(NOT_READY_RETRY_AFTER_SECONDS));
    throw new DocumentNotReadyError(agent.handle, name, NOT_READY_RETRY_AFTER_SECONDS);
  };

  /** The published object with exactly the headers the edge sends for it (src/api/middleware/edge.ts). */
  const sendPublished = async (req: Request, res: Response, agent: Agent, name: AgentDocumentName) => {
    let object: StoredObject | null;
    try {
      object = await objectAt(agentDocumentKey(agent.handle, name));
    } catch (err) {
      throw new DependencyUnavailableError('bucket', 5, { cause: err });
    }
    if (!object) return notReady(res, agent, name);
    sendStoredObject(req, res, object, AGENT_DOCUMENTS[name].headers);
  };

  const named = AGENT_DOCUMENT_NAMES.filter((n): n is keyof typeof DESCRIPTIONS => n !== 'badge.svg');
  const documentRoutes = named.map((name) =>
    defineRoute({
      method: 'get',
      path: expressPath(AGENT_DOCUMENTS[name].path),
      operationId: `getAgent_${name.replace(/[^a-z]/gi, '_')}`,
      summary: DESCRIPTIONS[name].summary,
      tags: ['agents'],
      staticDocument: true,
      params: Handle,
      // The body's schema and content type come from the catalogue (src/api/openapi.ts).
      responses: {
        200: { description: 'The document' },
        ...((name === 'agent-card.json' ? { 400: VERSION_NOT_SUPPORTED_RESPONSE } : {}) as Record<
          number,
          ResponseSpec
        >),
        404: NOT_FOUND,
        503: BUCKET_DOWN,
      },
      handler: async ({ params, req, res }) => {
        // A request naming an A2A version we do not serve (the edge sends such requests here).
        if (name === 'agent-card.json' && refuseUnsupportedA2AVersion(req, res)) return;
        return sendPublished(req, res, await findAgent(params.handle), name);
      },
    }),
  );
  const badge = defineRoute({
    method: 'get',
    path: expressPath(AGENT_DOCUMENTS['badge.svg'].path),
    operationId: 'getAgentBadge',
    summary:
      'SVG badge for READMEs: kind earnings (default), buyers, skills or verified; style flat (default) or for-the-badge',
    tags: ['agents'],
    staticDocument: true,
    params: Handle,
    query: z.object({ kind: z.enum(BADGE_KINDS).default('earnings'), style: z.enum(BADGE_STYLES).default('flat') }),
    responses: { 200: { description: 'SVG' }, 404: NOT_FOUND, 503: BUCKET_DOWN },
    handler: async ({ params, query, req, res }) => {
      const agent = await findAgent(params.handle);
      // The bucket holds earnings/flat; any other form comes from the figures published with it.
      if (query.kind === 'earnings' && query.style === 'flat') return sendPublished(req, res, agent, 'badge.svg');
      const svg = await readBadge(deps.db, agent, query.kind, query.style);
      if (svg === null) return notReady(res, agent, 'badge.svg');
      sendCacheable(req, res, {
        body: svg,
        contentType: AGENT_DOCUMENTS['badge.svg'].contentType,
        cacheControl: AGENT_DOCUMENTS['badge.svg'].cacheControl,
      });
    },
  });
  return [...documentRoutes, badge];
};
