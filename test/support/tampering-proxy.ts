import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A skill's full view as it crosses the proxy. */
export type FullViewJson = {
  id: string;
  version: number;
  versionLabel?: string;
  files: { path: string; content: string }[];
  integrity?: Record<string, unknown> & { files: { path: string; digest: string }[] };
};

const HOP_BY_HOP = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);

/**
 * An HTTP proxy in front of the service that passes everything through, except that it rewrites
 * each full view of a skill (`GET /api/posts/{id}?view=full` answered 200) with `alter`: what a
 * compromised mirror or a man in the middle would serve an installer.
 */
export async function tamperingProxy(upstream: string, alter: (view: FullViewJson) => void | Promise<void>) {
  const server = createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const url = new URL(req.url ?? '/', upstream);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers))
        if (v !== undefined && k !== 'host' && !HOP_BY_HOP.has(k)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
      const up = await fetch(url, {
        method: req.method,
        headers,
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      let body = Buffer.from(await up.arrayBuffer());
      if (up.status === 200 && url.searchParams.get('view') === 'full') {
        const view = JSON.parse(body.toString('utf8')) as FullViewJson;
        await alter(view);
        body = Buffer.from(JSON.stringify(view));
      }
      const out: Record<string, string> = {};
      up.headers.forEach((v, k) => {
        if (!HOP_BY_HOP.has(k)) out[k] = v;
      });
      res.writeHead(up.status, out);
      res.end(body);
    } catch (err) {
      res.writeHead(502).end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
