import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port handed out: above the registered services people commonly run on a machine. */
const LOWEST_PORT = 10_000;

/** Ports this process has handed out, so that two callers never get the same one. */
const handedOut = new Set<number>();

/**
 * First port of the kernel's ephemeral range: the ports it picks for outgoing connections (Linux's
 * default is 32768). Undefined where it cannot be read.
 */
function ephemeralLow(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : undefined;
  } catch {
    return undefined;
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
  // Where the range starts at or below LOWEST_PORT (a host tuned to 1024-65535), or is unknown,
  // nothing below it is safe to draw from: the kernel's own choice (port 0) is as good.
  const span = (ephemeralLow() ?? 0) - LOWEST_PORT;
  for (let attempt = 0; span > 0 && attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * span);
    if (handedOut.has(port)) continue;
    // Held from the draw on, so that a concurrent caller cannot draw it while this one checks it.
    handedOut.add(port);
    if ((await tryListen(port)) === port) return port;
    handedOut.delete(port);
  }
  const port = await tryListen(0);
  if (port === 0) throw new Error('no free loopback port');
  return port;
}

/** Resolves after `ms`; used for polling loops that must stay bounded. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
