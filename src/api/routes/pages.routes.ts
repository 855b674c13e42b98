import { z } from 'zod';
import type { Request, RequestHandler, Response } from 'express';
import type { ApiDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { sendCacheable, sendStoredObject } from '../http/cache.js';
import type { Searching } from './discovery.routes.js';
import { findAgentByHandleAnyCase } from '../../data/agents.repository.js';
import { HTML_TYPE, PATH_PARAMETERS } from '../../documents/document.js';
import { PAGE_HEADERS, PAGE_SCRIPT_PATH, renderMessagePage } from '../../documents/pages/layout.js';
import { PAGE_SCRIPT } from '../../documents/pages/page-script.js';
import { agentPageDocument, homePageDocument, skillPageDocument } from '../../documents/pages/pages.document.js';
import { renderSearchPage, type SearchPageView } from '../../documents/pages/search-page.renderer.js';
import type { SearchAnswer } from '../../domain/discovery/search.js';
import { renderHomePage, searchSuggestions } from '../../domain/pages/home-page.js';
import { renderSkillPageOf } from '../../domain/pages/skill-page.js';
import { readPublishedPost } from '../../domain/posts/post-reads.use-cases.js';
import {
  DependencyUnavailableError,
  NotFoundError,
  ServiceUnavailableError,
  ValidationError,
} from '../../platform/errors.js';
import { slotId } from '../../platform/queues.js';
import { withTimeout } from '../../platform/timeout.js';

/** The search API's bounds on `q`, which the page states instead of answering problem+json. */
const QUERY_MIN = 2;
const QUERY_MAX = 200;
const SEARCH_LIMIT = 20;
/** As the search API's answers: a popular query is computed once per process per 30 s. */
const SEARCH_CACHE = 'public, max-age=30, stale-while-revalidate=120';
/** An agent's first recompute takes about a second. */
const NOT_READY_RETRY_AFTER_SECONDS = 2;
const QUEUE_WAIT_MS = 500;

const HTML_RESPONSE = { contentType: 'text/html' };
/** The page script changes only with a release; a page cached longer still works without it. */
const SCRIPT_CACHE = 'public, max-age=300, stale-while-revalidate=3600';

/** A page for people, with the pages' headers (their CSP replaces the API's). */
function sendPage(res: Response, status: number, html: string, cacheControl = 'no-store') {
  res.status(status).set(PAGE_HEADERS).set('Cache-Control', cacheControl).type(HTML_TYPE).send(html);
}

/** A request from a browser: it prefers text/html to JSON (a client that does not gets problem+json). */
export const wantsPage = (req: Request) => req.accepts(['application/json', 'text/html']) === 'text/html';

/** 404 for an unknown agent or skill: a page for people, problem+json for programs. */
function notFound(req: Request, res: Response, what: string, message: string, code: string): void {
  if (!wantsPage(req)) throw new NotFoundError(`${what} ${req.path.split('/').at(-1)}`, code);
  sendPage(res, 404, renderMessagePage(`${what} not found`, message));
}

/** Paths of the API and of the documents for agents: an unknown one is answered problem+json, whoever asks. */
const AGENT_PATHS = /^\/(api|spec|\.well-known|openapi\.json|admin|metrics|mcp|discovery|healthz|readyz)(\/|$)/;

/**
 * An unknown path outside the API asked for by a browser (it prefers text/html to JSON): a 404
 * page for people instead of problem+json. Mounted just before the API's own not-found handler.
 */
export const pageNotFound: RequestHandler = (req, res, next) => {
  if ((req.method !== 'GET' && req.method !== 'HEAD') || AGENT_PATHS.test(req.path)) return next();
  if (!wantsPage(req)) return next();
  sendPage(res, 404, renderMessagePage('Page not found', `There is no page at ${req.path}.`));
};

/** `q` as a browser sends it: one value (the first of repeated ones), trimmed. */
const queryText = (q: unknown) => String((Array.isArray(q) ? q[0] : q) ?? '').trim();

/**
 * The pages for people. Each page is a bucket object the workers publish (the edge serves it);
 * these routes answer the same paths when the bucket has not got the page yet or no edge is in
 * front, and an unknown agent or skill with a 404 page (HTML, not problem+json). The search page is
 * rendered here for each query, from the same search as /api/discovery/search.
 */
export const pageRoutes = (deps: ApiDeps, searching: Searching): AnyRoute[] => {
  const agentPattern = new RegExp(`^${PATH_PARAMETERS.handle}$`);
  const postPattern = new RegExp(`^${PATH_PARAMETERS.postId}$`);

  /** Queues the agent's recompute (one job per agent per minute), waiting for Redis briefly. */
  const queueRecompute = async (agentId: string, handle: string) => {
    const jobId = slotId(`agent-documents-${agentId}-read`, new Date());
    const call = deps.queues.documents.add('agent-documents', { agentId, republish: true }, { jobId });
    call.catch(() => undefined);
    await withTimeout(call, QUEUE_WAIT_MS, 'queueing the recompute').catch((err: unknown) =>
      deps.log.warn({ err, agent: handle }, 'could not queue the recompute of an agent without a page in time'),
    );
  };

  return [
    defineRoute({
      method: 'get',
      path: PAGE_SCRIPT_PATH,
      operationId: 'getPageScript',
      summary: "The pages' one script (copy buttons on snippets); the pages work without it",
      tags: ['pages'],
      responses: { 200: { description: 'The script', contentType: 'text/javascript' } },
      handler: ({ req, res }) => {
        res.set('X-Content-Type-Options', 'nosniff');
        sendCacheable(req, res, {
          body: PAGE_SCRIPT,
          contentType: 'text/javascript; charset=utf-8',
          cacheControl: SCRIPT_CACHE,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/',
      operationId: 'getHomePage',
      summary: 'Home page for people (HTML): what the marketplace is, trending agents and tags, newest skills',
      tags: ['pages'],
      staticDocument: true,
      responses: { 200: { description: 'The page' } },
      handler: async ({ req, res }) => {
        res.set(PAGE_HEADERS);
        sendCacheable(req, res, {
          body: await renderHomePage(deps.db, deps.site),
          contentType: homePageDocument.contentType,
          cacheControl: homePageDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/agents/:handle',
      operationId: 'getAgentPage',
      summary:
        'Agent page for people (HTML): card, score and checklist, badges with embed snippets, skills, similar agents',
      tags: ['pages'],
      staticDocument: true,
      params: z.object({ handle: z.string().max(200).describe('agent handle') }),
      responses: {
        200: { description: 'The page' },
        404: {
          description: 'No such agent: a page for a browser (Accept prefers text/html), problem+json otherwise',
          ...HTML_RESPONSE,
        },
        503: {
          description: 'The page is being prepared (Retry-After): a page for a browser, problem+json otherwise',
          ...HTML_RESPONSE,
        },
      },
      handler: async ({ params, req, res }) => {
        const handle = params.handle.toLowerCase();
        const agent = agentPattern.test(handle) ? await findAgentByHandleAnyCase(deps.db, handle) : undefined;
        if (!agent) return notFound(req, res, 'Agent', `No agent has the handle @${params.handle}.`, 'agent_not_found');
        let object: Awaited<ReturnType<typeof deps.store.get>>;
        try {
          object = await deps.store.get(agentPageDocument.key({ handle: agent.handle }));
        } catch (err) {
          throw new DependencyUnavailableError('bucket', 5, { cause: err });
        }
        if (object) return sendStoredObject(req, res, object, agentPageDocument.headers);
        await queueRecompute(agent.id, agent.handle);
        res.set('Retry-After', String(NOT_READY_RETRY_AFTER_SECONDS));
        const message = `The page of @${agent.handle} is being prepared; reload it in a few seconds.`;
        if (!wantsPage(req))
          throw new ServiceUnavailableError(message, NOT_READY_RETRY_AFTER_SECONDS, 'document_not_ready');
        sendPage(res, 503, renderMessagePage('Page being prepared', message));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/skills/:postId',
      operationId: 'getSkillPage',
      summary: 'Skill page for people (HTML): preview, price, digest, how to buy with curl, the installer and MCP',
      tags: ['pages'],
      staticDocument: true,
      params: z.object({ postId: z.string().max(200).describe('post id (UUID)') }),
      responses: {
        200: { description: 'The page' },
        404: {
          description: 'No published skill with this id: a page for a browser, problem+json otherwise',
          ...HTML_RESPONSE,
        },
      },
      handler: async ({ params, req, res }) => {
        const missing = () =>
          notFound(req, res, 'Skill', `No published skill has the id ${params.postId}.`, 'post_not_found');
        if (!postPattern.test(params.postId)) return missing();
        let read: Awaited<ReturnType<typeof readPublishedPost>>;
        try {
          read = await readPublishedPost(deps.db, params.postId);
        } catch (err) {
          if (err instanceof NotFoundError) return missing();
          throw err;
        }
        res.set(PAGE_HEADERS);
        sendCacheable(req, res, {
          body: await renderSkillPageOf(deps.db, read.post, read.version, deps.site),
          contentType: skillPageDocument.contentType,
          cacheControl: skillPageDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/search',
      operationId: 'getSearchPage',
      rateLimit: 'search',
      summary: 'Search page for people (HTML): agents, skills and tags with links to their pages',
      description: `q: ${QUERY_MIN} to ${QUERY_MAX} characters once trimmed; an empty q shows the search box and suggestions. A q outside the bounds is answered 400 with a page saying so.`,
      tags: ['pages'],
      query: z.object({ q: z.unknown().optional().describe('what to search for') }),
      responses: {
        200: { description: 'The results page', ...HTML_RESPONSE },
        400: {
          description: 'Why the query was not searched: a page for a browser, problem+json otherwise',
          ...HTML_RESPONSE,
        },
      },
      handler: async ({ query, req, res }) => {
        const q = queryText(query.q);
        const view: SearchPageView = { query: q, suggestions: await searchSuggestions(deps.db) };
        if (q.length > 0 && q.length < QUERY_MIN) view.refusal = `Type at least ${QUERY_MIN} characters to search.`;
        else if (q.length > QUERY_MAX)
          view.refusal = `A search is at most ${QUERY_MAX} characters; this one has ${q.length}.`;
        else if (q.length) {
          const page = await searching(q, 'all', SEARCH_LIMIT);
          view.answer = JSON.parse(page.body.toString('utf8')) as SearchAnswer;
        }
        if (view.refusal) {
          if (!wantsPage(req))
            throw new ValidationError(view.refusal, [{ name: 'q', in: 'query', reason: view.refusal }]);
          return sendPage(res, 400, renderSearchPage(view));
        }
        res.set(PAGE_HEADERS);
        sendCacheable(req, res, { body: renderSearchPage(view), contentType: HTML_TYPE, cacheControl: SEARCH_CACHE });
      },
    }),
  ];
};
