import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { presentsAdminToken } from './admin-token.js';
import type { Logger } from './logger.js';

export interface MetricsServer {
  port: number;
  /** Stops listening and closes every connection at once (a scrape is never worth waiting for). */
  close(): Promise<void>;
}

function answer(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(body);
}

/**
 * Serves `GET /metrics` (Prometheus text) for a process that runs no API (a worker, the
 * scheduler), behind the same admin token as the API's `/metrics`. Anything else is 404.
 */
export function serveMetrics(
  registry: Registry,
  opts: { port: number; host: string; adminToken: string; log: Logger },
): Promise<MetricsServer> {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics') return answer(res, 404, 'not found: this port serves GET /metrics\n');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return answer(res, 405, 'method not allowed\n', { Allow: 'GET' });
    if (!presentsAdminToken(req.headers.authorization, opts.adminToken)) {
      return answer(res, 401, 'this page needs the admin token (Bearer)\n', {
        'WWW-Authenticate': 'Bearer realm="skill-market metrics"',
      });
    }
    try {
      answer(res, 200, await registry.metrics(), { 'Content-Type': registry.contentType });
    } catch (err) {
      opts.log.warn({ err }, 'metrics scrape failed');
      answer(res, 500, 'metrics could not be collected\n');
    }
  };
  return new Promise((resolve, reject) => {
    const server = createServer((req, res) => void handle(req, res));
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : opts.port;
      opts.log.info({ url: `http://${opts.host}:${port}/metrics` }, 'metrics listening');
      resolve({
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
