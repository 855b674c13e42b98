import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import type { Logger } from './logger.js';
import { freePort, sleep } from './net.js';
import { withTimeout } from './timeout.js';

export interface RedisHandle {
  url: string;
  /** Where it came from: configured, found on the default port, or spawned by us. */
  origin: 'configured' | 'found' | 'spawned';
  /** A connection suitable for BullMQ workers (no per-command retry limit: commands wait out an outage). */
  connection(): Redis;
  /**
   * A connection for producers and readers (Queue: add, counts, the dashboard). Commands are
   * refused at once while Redis is not ready, and one that gets no answer fails after
   * PRODUCER_COMMAND_TIMEOUT_MS, so a request never waits out an outage.
   */
  producer(): Redis;
  close(): Promise<void>;
}

const DEFAULT_URL = 'redis://127.0.0.1:6379';

/**
 * The longest a producer command may go unanswered: a Redis that is partitioned away (no reset,
 * so the connection still looks open) fails commands after this instead of holding them forever.
 * Producer commands take milliseconds; the dashboard's bulk actions are the slowest.
 */
export const PRODUCER_COMMAND_TIMEOUT_MS = 5_000;

export class RedisUnavailableError extends Error {}

/**
 * Finds Redis as ARCHITECTURE.md's table says: REDIS_URL if set; else 127.0.0.1:6379 if it
 * answers; else a `redis-server` from PATH on a free port (no persistence, stopped with us);
 * else a clear error that says how to install it.
 */
export async function openRedis(url: string | undefined, log: Logger, defaultUrl = DEFAULT_URL): Promise<RedisHandle> {
  if (url) return handle(url, 'configured', log);
  if (await answers(defaultUrl)) return handle(defaultUrl, 'found', log);

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
    // Bounded without a timer left behind: a pending 3 s sleep would keep a stopping process alive.
    await withTimeout(exited, 3000, 'redis-server exit').catch(() => undefined);
  };
  return handle(spawnedUrl, 'spawned', log, stopChild);
}

function handle(url: string, origin: RedisHandle['origin'], log: Logger, onClose?: () => Promise<void>): RedisHandle {
  const opened: Redis[] = [];
  return {
    url,
    origin,
    connection() {
      const conn = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
      opened.push(conn);
      return conn;
    },
    producer() {
      const conn = new Redis(url, {
        // BullMQ requires a null retry limit only of blocking (Worker) connections; a Queue accepts these.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
        enableReadyCheck: true,
      });
      // One line when Redis is lost and one when it is back, not one per reconnect attempt.
      let lost = false;
      conn.on('error', (err) => {
        if (lost || conn.status === 'ready') return;
        lost = true;
        log.warn(
          { err, url: redact(url) },
          'redis is unreachable: enqueues are refused and queue gauges go stale until it is back',
        );
      });
      conn.on('ready', () => {
        if (!lost) return;
        lost = false;
        log.info({ url: redact(url) }, 'redis is reachable again');
      });
      opened.push(conn);
      return conn;
    },
    async close() {
      // QUIT waits for Redis to answer; with Redis gone it would wait forever, so it gets a second.
      await Promise.all(
        opened.map((c) =>
          c.status === 'ready' ? withTimeout(c.quit(), 1_000, 'QUIT').catch(() => c.disconnect()) : c.disconnect(),
        ),
      );
      await onClose?.();
    },
  };
}

/** A URL fit for logs: without its password. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'redis://(unparseable url)';
  }
}

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
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
