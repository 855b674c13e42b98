import { MCP_PATH } from '../../documents/site-agent-card.renderer.js';
import type { StoredResource } from '../projections/bazaar-listings.js';

/** A resource of the Bazaar here: an HTTP route or an MCP tool. */
export type ListedResource = Omit<StoredResource, 'type'> & { type: 'http' | 'mcp' };

/** The resource types listed here, in the order a skill's listings come. */
export const RESOURCE_TYPES = ['http', 'mcp'] as const;

/** The MCP tool that sells a skill (src/api/mcp/mcp-server.ts): `buy_skill({postId})`. */
export const BUY_SKILL_TOOL = 'buy_skill';

/** The arguments of `buy_skill`, as the tool declares them. */
const BUY_SKILL_INPUT = {
  type: 'object',
  properties: { postId: { type: 'string', format: 'uuid', description: 'the skill to buy' } },
  required: ['postId'],
} as const;

/**
 * The declaration's own schema (JSON Schema 2020-12). The tool is named twice: `tool`, as the
 * Bazaar specification (specs/extensions/bazaar.md) writes it, and `toolName`, as
 * @x402/extensions (2.27) declares, validates and catalogues it; each reader finds its own.
 */
const MCP_DECLARATION_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    input: {
      type: 'object',
      properties: {
        type: { type: 'string', const: 'mcp' },
        tool: { type: 'string' },
        toolName: { type: 'string' },
        description: { type: 'string' },
        transport: { type: 'string', enum: ['streamable-http'] },
        inputSchema: { type: 'object' },
        example: { type: 'object' },
      },
      required: ['type', 'tool', 'toolName', 'inputSchema'],
      additionalProperties: false,
    },
    output: {
      type: 'object',
      properties: { type: { type: 'string' }, example: { type: 'object' } },
      required: ['type'],
    },
  },
  required: ['input'],
} as const;

/** The skill a listing sells: its `pathParams.postId`, or the id in its URL. */
function postIdOf(item: ListedResource): string | undefined {
  const info = (item.extensions.bazaar as { info?: { input?: { pathParams?: { postId?: unknown } } } }).info;
  const declared = info?.input?.pathParams?.postId;
  if (typeof declared === 'string') return declared;
  return /\/api\/posts\/([^/?#]+)/.exec(item.resource)?.[1];
}

/**
 * A skill's listing as an MCP tool (`type: "mcp"`): `buy_skill` on this service's MCP server,
 * paid on the same terms as the HTTP full view (the same `accepts`; the tool's 402 names them).
 * The Bazaar keys an MCP resource by its URL and tool; one tool sells every skill, so each
 * skill's resource URL names it (`/mcp?skill=<id>`, the MCP endpoint, whose query the server
 * ignores). Undefined for a listing that is not a skill's.
 */
export function mcpListingOf(baseUrl: string, item: ListedResource): ListedResource | undefined {
  const postId = postIdOf(item);
  if (!postId) return undefined;
  const output = (item.extensions.bazaar as { info?: { output?: { example?: unknown } } }).info?.output;
  const { resource: _http, type: _type, extensions: _ext, ...same } = item;
  return {
    resource: `${baseUrl}${MCP_PATH}?skill=${encodeURIComponent(postId)}`,
    type: 'mcp',
    ...same,
    extensions: {
      bazaar: {
        info: {
          input: {
            type: 'mcp',
            tool: BUY_SKILL_TOOL,
            toolName: BUY_SKILL_TOOL,
            description: `Buy the skill over MCP: call ${BUY_SKILL_TOOL}, then again with the x402 payment in _meta["x402/payment"]`,
            transport: 'streamable-http',
            inputSchema: BUY_SKILL_INPUT,
            example: { postId },
          },
          ...(output?.example !== undefined ? { output: { type: 'json', example: output.example } } : {}),
        },
        schema: MCP_DECLARATION_SCHEMA,
      },
    },
  };
}
