import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';

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

/** buy_skill, paying with `payment` in `_meta["x402/payment"]` when given. */
export async function buySkill(client: Client, postId: string, payment?: PaymentPayload): Promise<CallToolResult> {
  return (await client.callTool({
    name: 'buy_skill',
    arguments: { postId },
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  })) as CallToolResult;
}

/** buy_skill the way an MCP client with a wallet does it: ask, sign what is required, ask again. */
export async function buyOverMcp(client: Client, payer: x402Client, postId: string) {
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
