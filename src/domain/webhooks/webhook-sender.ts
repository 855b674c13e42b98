import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import type { WebhookNetworkPolicy } from './endpoint-url.js';

/** The most of a receiver's answer kept in the delivery log (bytes, then cut to characters). */
export const RESPONSE_EXCERPT_BYTES = 1024;

/** What one attempt came to. `status` is the receiver's HTTP status, if it answered at all. */
export interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  latencyMs: number;
  /** At most RESPONSE_EXCERPT_BYTES of the answer's body (UTF-8, control characters dropped). */
  excerpt: string | null;
  /** Why it failed, in a few words (never an address the name resolved to). */
  error: string | null;
}

/**
 * POSTs one signed delivery, within `policy.timeoutMs` for the whole exchange: only the addresses
 * the policy allows are connected to (checked at connect), redirects are not followed (a 3xx is a
 * failure), and at most RESPONSE_EXCERPT_BYTES of the answer are read before the connection is
 * dropped, so a slow, endless or redirecting receiver costs a worker one bounded attempt. A 2xx
 * answer is a success; anything else, or no answer, a failure to retry. Never throws.
 */
export function postDelivery(
  url: URL,
  body: string,
  headers: Record<string, string>,
  policy: WebhookNetworkPolicy,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const secure = url.protocol === 'https:';
  const agentOptions = {
    allowPrivateIPAddress: false,
    allowMetaIPAddress: false,
    keepAlive: false,
    ...(policy.allowLoopback ? { allowIPAddressList: ['127.0.0.1', '::1'] } : {}),
  };
  const agent = secure ? new RequestFilteringHttpsAgent(agentOptions) : new RequestFilteringHttpAgent(agentOptions);
  return new Promise<AttemptOutcome>((resolve) => {
    let settled = false;
    let status: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      agent.destroy();
      const excerpt = size ? excerptOf(Buffer.concat(chunks)) : null;
      const ok = error === null && status !== null && status >= 200 && status < 300;
      resolve({
        ok,
        status,
        latencyMs: Math.round(performance.now() - started),
        excerpt,
        error: ok
          ? null
          : (error ??
            `answered ${status}${status && status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`),
      });
    };
    const timer = setTimeout(() => finish(`no complete answer within ${policy.timeoutMs} ms`), policy.timeoutMs);
    const req = (secure ? httpsRequest : httpRequest)(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'skill-market-webhooks/1',
          ...headers,
        },
      },
      (res: IncomingMessage) => {
        status = res.statusCode ?? 0;
        res.on('data', (chunk: Buffer) => {
          const room = RESPONSE_EXCERPT_BYTES - size;
          if (room > 0) {
            chunks.push(chunk.subarray(0, room));
            size += Math.min(room, chunk.length);
          }
          // The rest of the answer is not read: its status decided already.
          if (size >= RESPONSE_EXCERPT_BYTES) finish(null);
        });
        res.on('end', () => finish(null));
        res.on('error', () => finish(null));
      },
    );
    // A system error's text names the address it connected to: only its code is kept. The
    // address filter's refusal has no code.
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish(`request failed (${err.code ?? 'address not allowed or connection refused'})`),
    );
    req.end(body);
  });
}

/** The answer's first bytes as text, control characters (but tab and newline) dropped. */
function excerptOf(bytes: Buffer): string {
  let text = '';
  for (const ch of bytes.toString('utf8')) {
    const code = ch.codePointAt(0) ?? 0;
    if ((code < 0x20 && ch !== '\t' && ch !== '\n') || code === 0x7f) continue;
    text += ch;
  }
  return text.slice(0, RESPONSE_EXCERPT_BYTES);
}
