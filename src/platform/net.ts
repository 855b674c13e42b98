import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port handed out: above the registered services people commonly run on a machine. */
const LOWEST_PORT = 10_000;

/** Ports this process has handed out, so that two callers never get the same one. */
const handedOut = new Set<number>();

/**
 * First port of the kernel's ephemeral range: the ports it picks for outgoing connections.
 * Linux's default is 32768; elsewhere, or when the file cannot be read, that default stands.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST_PORT ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Resolves with the port it could bind on loopback, or 0 when the port is taken or refused. */
function tryListen(port: number): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(0));
    srv.listen(port, '127.0.0.1', () => {
      const address = srv.address();
      const bound = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * A free loopback port for a server this process is about to start.
 *
 * The port is drawn below the kernel's ephemeral range. A port from that range (what listening
 * on port 0 gives) can be taken by any outgoing connection (to PostgreSQL, Redis, the chain) in
 * the time between this check and the server's bind; a port below it cannot.
 */
export async function freePort(): Promise<number> {
  const span = ephemeralLow() - LOWEST_PORT;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * span);
    if (handedOut.has(port)) continue;
    if ((await tryListen(port)) === port) {
      handedOut.add(port);
      return port;
    }
  }
  const port = await tryListen(0);
  if (port === 0) throw new Error('no free loopback port');
  return port;
}

/** Resolves after `ms`; used for polling loops that must stay bounded. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
