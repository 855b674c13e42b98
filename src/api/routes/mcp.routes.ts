import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import {
  createMcpHandler,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
  type McpRequestContext,
} from '@modelcontextprotocol/server';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { sendProblem } from '../http/problem.js';
import { defineRoute } from '../http/route.js';
import { authenticate } from '../middleware/auth.js';
import { buildMcpServer, type McpContext } from '../mcp/mcp-server.js';
import { taskKeyFrom } from '../mcp/purchase-tasks.js';
import { reviewToolDeps } from '../mcp/review-tools.js';
import { searchService } from './discovery.routes.js';
import { MCP_PATH, MCP_PROTOCOL_VERSION } from '../../documents/site-agent-card.renderer.js';
import { originAllowed, originPolicy } from '../../platform/allowed-origins.js';

const JsonRpcMessage = z
  .record(z.string(), z.unknown())
  .describe('a JSON-RPC 2.0 request or notification of the Model Context Protocol (or a batch of them)');

/** Whether an Accept header takes a JSON answer (no header takes anything). */
const takesJson = (accept: string | undefined) =>
  !accept || /(^|[\s,])(application\/(json|\*)|\*\/\*)(\s*[;,]|\s*$)/i.test(accept);

/**
 * The most JSON-RPC messages one POST may carry. Each message is a tool call that may search or
 * verify and settle a payment, and each counts against the client's rate limit; the SDK alone would
 * take 100.
 */
export const MCP_BATCH_MAX = 20;

/** Why a request is not one the MCP transport can take, as a problem (status, code, detail), or undefined. */
function notMcp(req: Request): [number, string, string] | undefined {
  if (!takesJson(req.get('accept')))
    return [406, 'not_acceptable', 'The MCP endpoint answers JSON: send Accept: application/json, text/event-stream'];
  if (!req.is('application/json'))
    return [415, 'unsupported_media_type', 'Send the JSON-RPC message as Content-Type: application/json'];
  const messages: unknown[] = Array.isArray(req.body) ? req.body : [req.body];
  // Counted before any message is parsed: a batch too large costs us nothing but its length.
  if (messages.length > MCP_BATCH_MAX)
    return [
      400,
      'batch_too_large',
      `A JSON-RPC batch holds at most ${MCP_BATCH_MAX} messages; this one holds ${messages.length}: send it in parts`,
    ];
  if (!messages.length || !messages.every((m) => JSONRPCMessageSchema.safeParse(m).success))
    return [
      400,
      'invalid_jsonrpc',
      'The body is not a JSON-RPC 2.0 message (or a batch of them) of the Model Context Protocol',
    ];
  return undefined;
}

/** The Express request as the web-standard Request the MCP SDK serves (its body parsed already). */
function webRequest(req: Request): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new globalThis.Request(new URL(req.originalUrl, 'http://mcp.internal'), {
    method: 'POST',
    headers,
    body: JSON.stringify(req.body),
  });
}

/** Writes the SDK's web-standard Response to Express: status, headers, then the body as it comes. */
async function send(answer: globalThis.Response, res: Response): Promise<void> {
  res.status(answer.status);
  answer.headers.forEach((value, name) => {
    res.setHeader(name, value);
  });
  res.set('Cache-Control', 'no-store');
  if (!answer.body) return void res.end();
  const body = Readable.fromWeb(answer.body as NodeReadableStream);
  res.on('close', () => body.destroy());
  body.pipe(res);
}

/**
 * The MCP server over Streamable HTTP, stateless: every POST is answered by a server built for it
 * (no session, nothing kept between requests), with a JSON answer rather than an event stream. GET
 * (the server-to-client stream) and DELETE (ending a session) have nothing to serve without
 * sessions and answer 405, as stateless servers do.
 *
 * Before any message runs: the Origin is checked (403 origin_not_allowed, the specification's
 * DNS-rebinding defence), the request's shape (406, 415, 400 batch_too_large, 400 invalid_jsonrpc),
 * then the client's `paid` rate limit takes one point per message (429). search_skills runs in the
 * search API's own queue and cache (searchService).
 */
export const mcpRoutes = (deps: ApiDeps) => {
  const posts = {
    db: deps.db,
    site: deps.site,
    chain: deps.chain,
    verifyMessage: deps.chain.publicClient.verifyMessage.bind(deps.chain.publicClient),
    chainChecks: deps.siwxChainChecks,
  };
  const origins = originPolicy({
    env: deps.config.env,
    allowedOrigins: deps.config.mcpAllowedOrigins,
    publicBaseUrl: deps.site.baseUrl,
  });
  const searching = searchService(deps);
  const reviewing = reviewToolDeps(deps);
  const taskKey = taskKeyFrom(deps.adminToken);
  /** What one request's server works with: the service's parts, the caller and the era. */
  const contextOf = (viewer: McpContext['viewer'], era: McpContext['era']): McpContext => ({
    posts,
    paywall: deps.paywall,
    store: deps.store,
    queues: deps.queues,
    log: deps.log,
    apiVersion: deps.site.apiVersion,
    viewer,
    searching,
    receipts: deps.receipts,
    taskKey,
    era,
    analytics: deps.analytics,
    ...reviewing,
  });
  // The caller rides to the factory in authInfo (the SDK passes it through untouched).
  const viewerOf = (ctx: McpRequestContext) => ctx.authInfo?.extra?.viewer as McpContext['viewer'];
  const modern = createMcpHandler((ctx) => buildMcpServer(contextOf(viewerOf(ctx), 'modern')), {
    legacy: 'reject',
    onerror: (err) => deps.log.debug({ err: err.message }, 'MCP request refused'),
  });
  /** A 2025-era request: a server and a stateless transport for it alone, answering in JSON. */
  const legacy = async (request: globalThis.Request, body: unknown, viewer: McpContext['viewer']) => {
    const server = buildMcpServer(contextOf(viewer, 'legacy'));
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { parsedBody: body });
    } finally {
      transport.close().catch(() => undefined);
      server.close().catch(() => undefined);
    }
  };
  return [
    defineRoute({
      method: 'post',
      path: MCP_PATH,
      operationId: 'mcp',
      summary: `MCP server (Streamable HTTP, stateless; revision ${MCP_PROTOCOL_VERSION} and the 2025 revisions): search, preview and buy skills over x402, agent scores`,
      description:
        'Tools search_skills, get_skill_preview, buy_skill (x402 over MCP: the PaymentRequired as structured content of a tool error, ' +
        'the payment in _meta["x402/payment"], the settlement in _meta["x402/payment-response"]), get_agent_score, ' +
        'and the reviews and refunds tools review_skill, revoke_review, respond_to_review, get_skill_reviews, request_refund, refund_purchase, decline_refund (docs/reputation.md); ' +
        'published skills as skill:// resources. Open to anyone; with an agent token (Authorization: Bearer, optional) its own and bought skills are delivered without payment. ' +
        `Revision ${MCP_PROTOCOL_VERSION}: every request carries the _meta envelope (protocol version, client info and capabilities) and the MCP-Protocol-Version and Mcp-Method headers; server/discover names what is served, ` +
        'list results carry ttlMs and cacheScope, and a purchase whose settlement is pending is a task (io.modelcontextprotocol/tasks: tasks/get) for clients that declare the extension; ' +
        'an unknown revision is the JSON-RPC error -32022 with the supported ones. Earlier revisions (initialize, no envelope) are served as before (docs/mcp.md). ' +
        `Send Accept: application/json, text/event-stream. A batch holds at most ${MCP_BATCH_MAX} messages, and each counts ` +
        'against the per-client paid rate limit. A browser Origin must be the public origin or one configured (MCP_ALLOWED_ORIGINS).',
      tags: ['mcp'],
      responses: {
        200: { description: 'The JSON-RPC answer', schema: JsonRpcMessage },
        202: { description: 'A notification or response was accepted (no body)' },
        400: {
          description: `Not a JSON-RPC message (invalid_jsonrpc), or a batch of more than ${MCP_BATCH_MAX} (batch_too_large)`,
        },
        401: { description: 'The bearer token is invalid (token_invalid)' },
        403: { description: 'The Origin header is not an origin allowed to call this endpoint (origin_not_allowed)' },
        406: { description: 'The Accept header does not take JSON (not_acceptable)' },
        415: { description: 'The body is not application/json (unsupported_media_type)' },
        429: {
          description:
            'Too many paid requests from this address, one per JSON-RPC message (problem+json rate_limited); retry after Retry-After seconds',
          headers: { 'Retry-After': 'seconds' },
        },
      },
      handler: async ({ req, res }) => {
        const origin = req.get('origin');
        if (!originAllowed(origin, origins))
          return void sendProblem(
            res,
            403,
            'origin_not_allowed',
            'Browser pages of this origin may not call the MCP endpoint (clients that are not browsers send no Origin)',
          );
        // Refused here with problem+json, as every 4xx of the API, before the SDK would answer in JSON-RPC.
        const refusal = notMcp(req);
        if (refusal) return void sendProblem(res, ...refusal);
        const messages = Array.isArray(req.body) ? req.body.length : 1;
        if (!(await deps.rateLimits.take('paid', messages, req, res))) return;
        const viewer = authenticate(req, deps.jwt, false);
        // The answer is JSON either way (no event stream), so a client that takes JSON is served.
        req.headers.accept = 'application/json, text/event-stream';
        const request = webRequest(req);
        const answer = (await isLegacyRequest(request, req.body))
          ? await legacy(request, req.body, viewer)
          : await modern.fetch(request, {
              parsedBody: req.body,
              authInfo: { token: '', clientId: viewer?.sub ?? 'anonymous', scopes: [], extra: { viewer } },
            });
        await send(answer, res);
      },
    }),
  ];
};
