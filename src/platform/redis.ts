import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import type { Logger } from './logger.js';
import { freePort, sleep } from './net.js';

export interface RedisHandle {
  url: string;
  /** Where it came from: configured, found on the default port, or spawned by us. */
  origin: 'configured' | 'found' | 'spawned';
  /** A connection suitable for BullMQ (no per-command retry limit). */
  connection(): Redis;
  close(): Promise<void>;
}

const DEFAULT_URL = 'redis://127.0.0.1:6379';

export class RedisUnavailableError extends Error {}

/**
 * Finds Redis as ARCHITECTURE.md's table says: REDIS_URL if set; else 127.0.0.1:6379 if it
 * answers; else a `redis-server` from PATH on a free port (no persistence, stopped with us);
 * else a clear error that says how to install it.
 */
export async function openRedis(url: string | undefined, log: Logger, defaultUrl = DEFAULT_URL): Promise<RedisHandle> {
  if (url) return handle(url, 'configured');
  if (await answers(defaultUrl)) return handle(defaultUrl, 'found');

  const port = await freePort();
  let child: ChildProcess;
  try {
    child = await spawnRedis(port);
  } catch (err) {
    throw new RedisUnavailableError(
      `No Redis: REDIS_URL is unset, nothing answers on ${defaultUrl}, and \`redis-server\` could not be started ` +
        `(${(err as Error).message}). Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) ` +
        'or set REDIS_URL.',
    );
  }
  const spawnedUrl = `redis://127.0.0.1:${port}`;
  log.info({ url: spawnedUrl, pid: child.pid }, 'spawned redis-server for embedded mode');
  const stopChild = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(3000)]);
  };
  return handle(spawnedUrl, 'spawned', stopChild);
}

function handle(url: string, origin: RedisHandle['origin'], onClose?: () => Promise<void>): RedisHandle {
  const opened: Redis[] = [];
  return {
    url,
    origin,
    connection() {
      const conn = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
      opened.push(conn);
      return conn;
    },
    async close() {
      await Promise.all(opened.map((c) => c.quit().catch(() => c.disconnect())));
      await onClose?.();
    },
  };
}

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, connectTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

async function spawnRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  // Never outlive the parent: a dev Redis left behind would hold its port forever.
  const kill = () => child.kill('SIGTERM');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('spawn', resolve);
  });
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if (await answers(`redis://127.0.0.1:${port}`)) return child;
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not answer within 5 s');
}
