import { createServer } from 'node:net';

/** Asks the OS for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves after `ms`; used for polling loops that must stay bounded. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
