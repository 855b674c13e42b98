import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';
import { HandleSchema } from '../../domain/identity/handles.js';
import type { AgentClaims } from '../../domain/identity/jwt.js';
import type { Paywall } from '../../domain/payments/paywall/paywall.js';
import type { PostsDeps } from '../../domain/posts/post-reads.use-cases.js';
import type { Logger } from '../../platform/logger.js';
import type { ObjectStore } from '../../platform/object-store.js';
import type { Queues } from '../../platform/queues.js';
import { SEARCH_LIMIT_MAX, SearchText, type Searching } from '../routes/discovery.routes.js';
import { buySkill, PAYMENT_META } from './buy-skill.js';
import { listSkillResources, readSkillFile, skillIndex } from './skill-resources.js';
import { agentScore, searchSkills, skillPreview } from './skill-tools.js';
import { registerReviewTools, type ReviewToolsContext } from './review-tools.js';
import { answering } from './tool-results.js';

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
}

const PostId = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a skill id (a UUID)')
  .describe('the skill id (post id, a UUID), as search_skills returns it');

// Built once: every request's server registers the same tools. A search is bounded as the search API's is.
const SEARCH_INPUT = {
  query: SearchText.describe('what the skill should do'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(SEARCH_LIMIT_MAX)
    .default(10)
    .describe(`at most this many skills (1 to ${SEARCH_LIMIT_MAX})`),
};
const POST_INPUT = { postId: PostId };
const HANDLE_INPUT = { handle: HandleSchema.describe('the agent handle, e.g. acme-extractor') };

/**
 * The JSON Schema validator of every request's server. The SDK builds one (an Ajv instance) per
 * server unless it is given one, and that cost more than the rest of building the server.
 */
const VALIDATOR = new AjvJsonSchemaValidator();

const INSTRUCTIONS =
  'Skill Market sells Agent Skills (a SKILL.md folder) for USDC over x402. Find skills with search_skills, ' +
  'read one with get_skill_preview, and get its files with buy_skill: a paid skill answers with an x402 ' +
  'PaymentRequired (a tool error); call buy_skill again with the signed PaymentPayload in ' +
  '_meta["x402/payment"] and the settlement comes back in _meta["x402/payment-response"]. Every delivered ' +
  'skill carries `integrity` (sha256 digests of each file and of the skill). Free skills, and skills you ' +
  'bought (send your agent token as Authorization: Bearer), are also readable as skill:// resources. ' +
  'Buyers review what they bought with review_skill (signed by the paying wallet, EIP-712 SkillReview) and ' +
  'read ratings with get_skill_reviews; refunds go through request_refund, refund_purchase and decline_refund.';

/**
 * The MCP server of one request (stateless Streamable HTTP: a server per request, nothing kept
 * between them). Tools validate their input with zod; a bad input is a tool error naming the
 * field, never a failure of the request.
 */
export function buildMcpServer(ctx: McpContext): McpServer {
  const server = new McpServer(
    { name: 'skill-market', title: 'Skill Market', version: ctx.apiVersion },
    { instructions: INSTRUCTIONS, jsonSchemaValidator: VALIDATOR },
  );
  const run = (tool: string, fn: Parameters<typeof answering>[2]) => answering(ctx.log, tool, fn);

  server.registerTool(
    'search_skills',
    {
      title: 'Search skills',
      description:
        'Full-text search (typo tolerant) of published skills: title, preview, tags. Best first, with price and seller.',
      inputSchema: SEARCH_INPUT,
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
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ postId }) => run('get_skill_preview', () => skillPreview(ctx.posts, postId, ctx.viewer)),
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
      annotations: { readOnlyHint: false, idempotentHint: true, openWorldHint: true },
    },
    ({ postId }, extra) =>
      run('buy_skill', () => {
        const meta = extra._meta as Record<string, unknown> | undefined;
        const payment = meta && Object.hasOwn(meta, PAYMENT_META) ? meta[PAYMENT_META] : undefined;
        return buySkill({ posts: ctx.posts, paywall: ctx.paywall }, postId, ctx.viewer, payment);
      }),
  );

  server.registerTool(
    'get_agent_score',
    {
      title: "Read an agent's score",
      description:
        "An agent's market score (0 to 100) with its dimensions and health, and its best-practices checklist with how to fix each item.",
      inputSchema: HANDLE_INPUT,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ handle }) =>
      run('get_agent_score', () => agentScore({ db: ctx.posts.db, store: ctx.store, queues: ctx.queues }, handle)),
  );

  registerReviewTools(server, ctx);

  server.registerResource(
    'skill-index',
    'skill://index.json',
    { title: 'Skill index', description: 'The published skills (SEP-2640 index)', mimeType: 'application/json' },
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
    },
    (uri, vars) =>
      readSkillFile(ctx.posts, ctx.viewer, uri.toString(), {
        postId: String(vars.postId),
        name: String(vars.name),
        path: String(vars.path),
      }),
  );
  return server;
}
