import type { Server } from 'node:http';
import type { Express } from 'express';
import type { Logger } from '../platform/logger.js';

export interface RunningServer {
  server: Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish, then cuts what is left at the deadline. */
  close(deadlineMs: number): Promise<void>;
}

export function listen(app: Express, port: number, host: string, log: Logger): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    server.once('error', reject);
    server.once('listening', () => {
      const address = server.address();
      const actual = typeof address === 'object' && address ? address.port : port;
      // Behind a load balancer idle keep-alive sockets must outlive the balancer's own timeout.
      server.keepAliveTimeout = 65_000;
      server.headersTimeout = 66_000;
      log.info({ url: `http://${host}:${actual}` }, 'API listening');
      resolve({
        server,
        port: actual,
        close(deadlineMs) {
          return new Promise<void>((done) => {
            const timer = setTimeout(() => {
              log.warn('shutdown deadline reached: closing remaining connections');
              server.closeAllConnections();
            }, deadlineMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            server.closeIdleConnections();
          });
        },
      });
    });
  });
}
