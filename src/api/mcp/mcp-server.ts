import {
  McpServer,
  ResourceTemplate,
  type CacheHint,
  type CallToolResult,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { z } from 'zod';
import type { Payment } from '../../data/schema.js';
import { HandleSchema } from '../../domain/identity/handles.js';
import type { AgentClaims } from '../../domain/identity/jwt.js';
import type { Paywall, PaywallOutcome } from '../../domain/payments/paywall/paywall.js';
import { countOutcome, type FunnelCounters } from '../../domain/analytics/funnel-counters.js';
import type { PostsDeps } from '../../domain/posts/post-reads.use-cases.js';
import type { Logger } from '../../platform/logger.js';
import type { ObjectStore } from '../../platform/object-store.js';
import type { Queues } from '../../platform/queues.js';
import type { ReceiptIssuer } from '../../domain/payments/protocol/extensions/offer-receipt.js';
import { SEARCH_LIMIT_MAX, SearchText, type Searching } from '../routes/discovery.routes.js';
import { buySkill, PAYMENT_META } from './buy-skill.js';
import { listSkillResources, readSkillFile, skillIndex } from './skill-resources.js';
import { agentScore, searchSkills, skillPreview } from './skill-tools.js';
import { registerReviewTools, type ReviewToolsContext } from './review-tools.js';
import { answering } from './tool-results.js';
import { AgentScoreOutput, BuySkillOutput, SearchSkillsOutput, SkillPreviewOutput } from './tool-outputs.js';
import {
  acknowledgePurchaseTask,
  createPurchaseTask,
  getPurchaseTask,
  TASKS_EXTENSION,
  type PurchaseTaskDeps,
} from './purchase-tasks.js';

/** What the MCP server of one request works with: the service's parts and who is calling. */
export interface McpContext {
  posts: PostsDeps;
  paywall: Paywall;
  store: ObjectStore;
  queues: Queues;
  log: Logger;
  apiVersion: string;
  /** The agent signed in with `Authorization: Bearer`, if any: the author or a buyer reads for free. */
  viewer: AgentClaims | undefined;
  /** The search API's own search: its queue, its cache, its bounds (searchService). */
  searching: Searching;
  /** What the review and refund tools call (reviewToolDeps). */
  reviews: ReviewToolsContext['reviews'];
  refunds: ReviewToolsContext['refunds'];
  /** Signs the offer-receipt receipt of a settlement a purchase task delivers. */
  receipts: ReceiptIssuer | undefined;
  /** The key purchase task ids are authenticated with (taskKeyFrom). */
  taskKey: Buffer;
  /**
   * The protocol era the request is served in: `modern` (2026-07-28, `_meta` envelope on every
   * request) or `legacy` (2025-11-25 and earlier, `initialize`).
   */
  era: 'modern' | 'legacy';
  /** Counts buy_skill's funnel steps (source `mcp`) for the seller's analytics. */
  analytics?: FunnelCounters;
}

const PostId = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a skill id (a UUID)')
  .describe('the skill id (post id, a UUID), as search_skills returns it');

// Built once: every request's server registers the same tools. A search is bounded as the search API's is.
const SEARCH_INPUT = z.object({
  query: SearchText.describe('what the skill should do'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(SEARCH_LIMIT_MAX)
    .default(10)
    .describe(`at most this many skills (1 to ${SEARCH_LIMIT_MAX})`),
});
const POST_INPUT = z.object({ postId: PostId });
const HANDLE_INPUT = z.object({ handle: HandleSchema.describe('the agent handle, e.g. acme-extractor') });

/**
 * The JSON Schema validator of every request's server. The SDK builds one (an Ajv instance) per
 * server unless it is given one, and that cost more than the rest of building the server.
 */
const VALIDATOR = new AjvJsonSchemaValidator();

/**
 * How long a 2026-07-28 client may keep each list (`ttlMs`, `cacheScope`), by how its data changes:
 * the server's description and its tools change only with a deployment; the published skills
 * (resources/list, skill://index.json) change whenever a seller publishes, as often as the search
 * API's 30 s cache allows the rest of the catalogue to lag; none of the lists depends on who asks,
 * so they are `public`. A skill file is read with the caller's agent token (a paid skill's files
 * are its buyers'), so its read is `private`.
 */
export const CACHE_HINTS = {
  'server/discover': { ttlMs: 600_000, cacheScope: 'public' },
  'tools/list': { ttlMs: 600_000, cacheScope: 'public' },
  'resources/templates/list': { ttlMs: 600_000, cacheScope: 'public' },
  'resources/list': { ttlMs: 30_000, cacheScope: 'public' },
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
} as const satisfies Record<string, CacheHint>;
const SKILL_INDEX_CACHE = { ttlMs: 30_000, cacheScope: 'public' } as const satisfies CacheHint;
const SKILL_FILE_CACHE = { ttlMs: 60_000, cacheScope: 'private' } as const satisfies CacheHint;

const INSTRUCTIONS =
  'Skill Market sells Agent Skills (a SKILL.md folder) for USDC over x402. Find skills with search_skills, ' +
  'read one with get_skill_preview, and get its files with buy_skill: a paid skill answers with an x402 ' +
  'PaymentRequired (a tool error); call buy_skill again with the signed PaymentPayload in ' +
  '_meta["x402/payment"] and the settlement comes back in _meta["x402/payment-response"]. Every delivered ' +
  'skill carries `integrity` (sha256 digests of each file and of the skill). Free skills, and skills you ' +
  'bought (send your agent token as Authorization: Bearer), are also readable as skill:// resources. ' +
  'Buyers review what they bought with review_skill (signed by the paying wallet, EIP-712 SkillReview) and ' +
  'read ratings with get_skill_reviews; refunds go through request_refund, refund_purchase and decline_refund. ' +
  'A client that takes the io.modelcontextprotocol/tasks extension gets a purchase whose settlement is pending as a task: poll tasks/get until it is completed.';

/** Whether the request declared the tasks extension in its per-request capabilities (2026-07-28 `_meta`). */
function takesTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = envelope?.['io.modelcontextprotocol/clientCapabilities'] as
    | { extensions?: Record<string, unknown> }
    | undefined;
  return caps?.extensions?.[TASKS_EXTENSION] !== undefined;
}

const TaskParams = z.looseObject({ taskId: z.string().min(1).max(200) });

/**
 * The MCP server of one request (stateless Streamable HTTP: a server per request, nothing kept
 * between them). Tools validate their input with zod; a bad input is a tool error naming the
 * field, never a failure of the request.
 */
export function buildMcpServer(ctx: McpContext): McpServer {
  const server = new McpServer(
    { name: 'skill-market', title: 'Skill Market', version: ctx.apiVersion },
    {
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: VALIDATOR,
      cacheHints: CACHE_HINTS,
      // Tools and skills change with deployments and publications, never by notification: clients
      // re-list after ttlMs, so no list is announced as changing.
      capabilities: {
        tools: { listChanged: false },
        resources: { listChanged: false },
        extensions: { [TASKS_EXTENSION]: {} },
      },
    },
  );
  const tasks: PurchaseTaskDeps = {
    posts: ctx.posts,
    paywall: ctx.paywall,
    receipts: ctx.receipts,
    taskKey: ctx.taskKey,
  };
  const run = (tool: string, fn: Parameters<typeof answering>[2]) => answering(ctx.log, tool, fn);
  /** buy_skill; `asTask` set, a pending settlement is answered as a task (CreateTaskResult). */
  const buy = (postId: string, extra: ServerContext, asTask: ((p: Payment) => Record<string, unknown>) | undefined) => {
    const meta = extra.mcpReq._meta as Record<string, unknown> | undefined;
    const payment = meta && Object.hasOwn(meta, PAYMENT_META) ? meta[PAYMENT_META] : undefined;
    const counted = (outcome: PaywallOutcome) => ctx.analytics && countOutcome(ctx.analytics, postId, outcome, 'mcp');
    return buySkill({ posts: ctx.posts, paywall: ctx.paywall, asTask, counted }, postId, ctx.viewer, payment);
  };

  server.registerTool(
    'search_skills',
    {
      title: 'Search skills',
      description:
        'Full-text search (typo tolerant) of published skills: title, preview, tags. Best first, with price and seller.',
      inputSchema: SEARCH_INPUT,
      outputSchema: SearchSkillsOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ query, limit }) => run('search_skills', () => searchSkills(ctx.posts, ctx.searching, query, limit)),
  );

  server.registerTool(
    'get_skill_preview',
    {
      title: 'Read a skill preview',
      description:
        "A skill's public preview: what it does, its Agent Skill name and description, its files, seller, price, and whether you already have it.",
      inputSchema: POST_INPUT,
      outputSchema: SkillPreviewOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ postId }) =>
      run('get_skill_preview', async () => {
        const preview = await skillPreview(ctx.posts, postId, ctx.viewer);
        // A preview read over MCP is a view of the skill, as a manifest read over HTTP is.
        ctx.analytics?.count(postId, 'view', 'mcp');
        return preview;
      }),
  );

  server.registerTool(
    'buy_skill',
    {
      title: 'Buy a skill',
      description:
        'The skill files with their integrity (sha256 digests, seller signature). Free skills, your own and ones you bought are delivered at once; ' +
        'otherwise the answer is an x402 PaymentRequired (isError, structuredContent): pay by calling again with the PaymentPayload in _meta["x402/payment"]. ' +
        'Add the payment-identifier extension to make retries safe: the same identifier and payment is answered again, never charged twice.',
      inputSchema: POST_INPUT,
      outputSchema: BuySkillOutput,
      annotations: { readOnlyHint: false, idempotentHint: true, openWorldHint: true },
    },
    ({ postId }, extra) => run('buy_skill', () => buy(postId, extra, undefined) as Promise<CallToolResult>),
  );

  server.registerTool(
    'get_agent_score',
    {
      title: "Read an agent's score",
      description:
        "An agent's market score (0 to 100) with its dimensions and health, and its best-practices checklist with how to fix each item.",
      inputSchema: HANDLE_INPUT,
      outputSchema: AgentScoreOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ handle }) =>
      run('get_agent_score', () => agentScore({ db: ctx.posts.db, store: ctx.store, queues: ctx.queues }, handle)),
  );

  registerReviewTools(server, ctx);

  server.registerResource(
    'skill-index',
    'skill://index.json',
    {
      title: 'Skill index',
      description: 'The published skills (SEP-2640 index)',
      mimeType: 'application/json',
      cacheHint: SKILL_INDEX_CACHE,
    },
    () => skillIndex(ctx.posts),
  );

  server.registerResource(
    'skill-file',
    new ResourceTemplate('skill://{postId}/{name}/{+path}', {
      list: async () => ({ resources: await listSkillResources(ctx.posts) }),
    }),
    {
      title: 'Skill file',
      description:
        "A file of a published skill: SKILL.md and its scripts/, references/, assets/. A paid skill's files are its buyers' only.",
      cacheHint: SKILL_FILE_CACHE,
    },
    (uri, vars) =>
      readSkillFile(ctx.posts, ctx.viewer, uri.toString(), {
        postId: String(vars.postId),
        name: String(vars.name),
        path: String(vars.path),
      }),
  );
  servePurchaseTasks(server, ctx, tasks, (postId, extra) =>
    run('buy_skill', () => buy(postId, extra, (p) => createPurchaseTask(ctx.taskKey, p)) as Promise<CallToolResult>),
  );
  return server;
}

/**
 * The tasks extension (SEP-2663), which the SDK does not implement: buy_skill called by a client
 * that declared the extension answers a pending settlement with a CreateTaskResult, and
 * tasks/get, tasks/update and tasks/cancel serve purchase tasks. The SDK's tools/call handler
 * checks every answer against the tool's outputSchema, which a task is not, so buy_skill's task
 * path runs in front of it; every other call goes to the SDK's handler unchanged.
 *
 * On the legacy era an unknown tool stays what the 1.x SDK answered (a tool error naming it),
 * where the 2.x handler answers a JSON-RPC error; clients written against it keep working.
 */
function servePurchaseTasks(
  server: McpServer,
  ctx: McpContext,
  tasks: PurchaseTaskDeps,
  buyAsTask: (postId: string, extra: ServerContext) => Promise<CallToolResult>,
) {
  type Handler = (request: { params: { name: string; arguments?: unknown } }, extra: ServerContext) => Promise<unknown>;
  // The SDK keeps its tools/call handler private; it is read back to stay the path of every other call.
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers;
  const sdkToolsCall = handlers.get('tools/call');
  if (!sdkToolsCall) throw new Error('the SDK registers tools/call with the first tool');
  server.server.setRequestHandler('tools/call', async (request, extra) => {
    const { name } = request.params;
    if (name === 'buy_skill' && ctx.era === 'modern' && takesTasks(extra)) {
      const input = POST_INPUT.safeParse(request.params.arguments ?? {});
      if (input.success) return (await buyAsTask(input.data.postId, extra)) as never;
    }
    if (ctx.era === 'legacy' && !registeredTool(server, name)) {
      return { content: [{ type: 'text', text: `Tool ${name} not found` }], isError: true };
    }
    return sdkToolsCall(request, extra) as never;
  });
  server.server.setRequestHandler('tasks/get', { params: TaskParams }, async ({ taskId }) =>
    getPurchaseTask(tasks, taskId as string),
  );
  for (const method of ['tasks/update', 'tasks/cancel'])
    server.server.setRequestHandler(method, { params: TaskParams }, async ({ taskId }) =>
      acknowledgePurchaseTask(tasks, taskId as string),
    );
}

/** Whether a tool of this name is registered (the SDK keeps its registry private too). */
function registeredTool(server: McpServer, name: string): boolean {
  const tools = (server as unknown as { _registeredTools: Record<string, unknown> })._registeredTools;
  return Object.hasOwn(tools, name);
}
