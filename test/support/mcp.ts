import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';

/** The SDK's own MCP client connected to `${url}/mcp`, with an agent token when given. */
export async function connectMcp(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'market-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : undefined,
  });
  await client.connect(transport);
  return client;
}

/**
 * The PaymentRequired of a tool result, read as the x402 MCP transport tells clients to: the
 * structured content when it holds `x402Version` and `accepts`, else the first text parsed.
 */
export function paymentRequiredOf(result: CallToolResult): PaymentRequired | undefined {
  if (!result.isError) return undefined;
  const structured = result.structuredContent as Partial<PaymentRequired> | undefined;
  if (structured?.x402Version && Array.isArray(structured.accepts)) return structured as PaymentRequired;
  const first = result.content[0];
  if (first?.type !== 'text') return undefined;
  try {
    const parsed = JSON.parse(first.text) as Partial<PaymentRequired>;
    return parsed.x402Version && Array.isArray(parsed.accepts) ? (parsed as PaymentRequired) : undefined;
  } catch {
    return undefined;
  }
}

/** What buy_skill needs of a client: the SDK 1.x client and the 2.x one both have it. */
export interface ToolCaller {
  callTool(params: {
    name: string;
    arguments?: Record<string, unknown>;
    _meta?: Record<string, unknown>;
  }): Promise<unknown>;
}

/** buy_skill, paying with `payment` in `_meta["x402/payment"]` when given. */
export async function buySkill(client: ToolCaller, postId: string, payment?: PaymentPayload): Promise<CallToolResult> {
  return (await client.callTool({
    name: 'buy_skill',
    arguments: { postId },
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  })) as CallToolResult;
}

/** buy_skill the way an MCP client with a wallet does it: ask, sign what is required, ask again. */
export async function buyOverMcp(client: ToolCaller, payer: x402Client, postId: string) {
  const required = paymentRequiredOf(await buySkill(client, postId));
  if (!required) throw new Error('buy_skill did not answer with a PaymentRequired');
  const payment = await payer.createPaymentPayload(required);
  return { required, payment, result: await buySkill(client, postId, payment) };
}

/** A tool call's answer, as the SDK's client returns it. */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The stable `code` of a tool error (`structuredContent.error.code`), or undefined for an answer. */
export function toolErrorCode(result: CallToolResult): string | undefined {
  if (!result.isError) return undefined;
  return (result.structuredContent as { error?: { code?: string } } | undefined)?.error?.code;
}

/** The tasks extension's key (SEP-2663), as a client declares it in its per-request capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Every tool the marketplace's MCP server lists, sorted: the same under either revision. */
export const MCP_TOOL_NAMES = [
  'buy_skill',
  'decline_refund',
  'get_agent_score',
  'get_skill_preview',
  'get_skill_reviews',
  'refund_purchase',
  'request_refund',
  'respond_to_review',
  'review_skill',
  'revoke_review',
  'search_skills',
];

/** What the current-revision client saw on the wire: each answer body, by the JSON-RPC method asked. */
export interface WireLog {
  answers: Array<{ method: string; status: number; body: unknown }>;
  /** The last answer to `method`. */
  last(method: string): unknown;
}

/**
 * The official MCP 2.x client (`@modelcontextprotocol/client`) connected to `${url}/mcp` at the
 * 2026-07-28 revision (pinned: connect fails unless `server/discover` offers it), declaring the
 * tasks extension. Its transport's fetch is recorded (`wire`), because the 2.x client refuses a
 * result kind it does not implement (a CreateTaskResult, `resultType: "task"`) without handing it
 * over: a test reads that answer from the wire, as a client implementing the extension does.
 */
export async function connectCurrentMcp(
  url: string,
  options: { token?: string; tasks?: boolean; origin?: string } = {},
): Promise<{ client: ModernClient; wire: WireLog }> {
  const answers: WireLog['answers'] = [];
  const recording: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const sent = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : undefined;
    if (sent?.method && res.headers.get('content-type')?.startsWith('application/json')) {
      answers.push({ method: sent.method, status: res.status, body: await res.clone().json() });
    }
    return res;
  };
  const client = new ModernClient(
    { name: 'market-test-current', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: options.tasks === false ? {} : { extensions: { [TASKS_EXTENSION]: {} } },
    },
  );
  await client.connect(
    new ModernTransport(new URL(`${url}/mcp`), {
      fetch: recording,
      requestInit: {
        headers: {
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(options.origin ? { origin: options.origin } : {}),
        },
      },
    }),
  );
  const last = (method: string) => answers.filter((a) => a.method === method).at(-1)?.body;
  return { client, wire: { answers, last } };
}
