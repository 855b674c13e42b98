import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingRpcProxy {
  url: string;
  /** JSON-RPC calls forwarded so far, by method (a batch counts each of its calls). */
  calls: Map<string, number>;
  /** eth_call requests addressed to `watched` (the IdentityRegistry, say). */
  callsTo(address: string): number;
  total(): number;
  close(): Promise<void>;
}

/**
 * A JSON-RPC proxy in front of a node that counts what passes through it: point a service's
 * RPC_URL at it and the counts say exactly which chain calls the service made, and when.
 */
export async function startCountingRpcProxy(upstream: string): Promise<CountingRpcProxy> {
  const calls = new Map<string, number>();
  const callsByTarget = new Map<string, number>();
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString();
    try {
      const parsed = JSON.parse(body) as
        | { method?: string; params?: Array<{ to?: string }> }
        | Array<{ method?: string; params?: Array<{ to?: string }> }>;
      for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
        const method = call.method ?? '?';
        calls.set(method, (calls.get(method) ?? 0) + 1);
        const to = method === 'eth_call' ? call.params?.[0]?.to?.toLowerCase() : undefined;
        if (to) callsByTarget.set(to, (callsByTarget.get(to) ?? 0) + 1);
      }
    } catch {
      // Not JSON: forwarded as is, for the node to refuse.
    }
    try {
      const answer = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await answer.arrayBuffer()));
    } catch {
      res.writeHead(502).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    callsTo: (address) => callsByTarget.get(address.toLowerCase()) ?? 0,
    total: () => [...calls.values()].reduce((a, b) => a + b, 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
