import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/logger.js';
import { freePort } from '../../src/platform/net.js';
import { startService, type Role, type RunningService } from '../../src/bootstrap/service.js';
import { freshDatabase, type TestDatabase } from './database.js';
import { TEST_REDIS_URL } from './env.js';

export interface TestService {
  url: string;
  config: Config;
  service: RunningService;
  database: TestDatabase;
  adminToken: string;
  stop(): Promise<void>;
}

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * The whole service in this process against real PostgreSQL (a fresh database), real Redis (a
 * fresh queue prefix), an s3rver bucket in a temp dir and an anvil chain, on a free port.
 */
export async function startTestService(env: Record<string, string> = {}, role: Role = 'all'): Promise<TestService> {
  const database = await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'market-test-'));
  const configFor = (port: number) =>
    loadConfig({
      NODE_ENV: 'test',
      PORT: String(port),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `t${randomBytes(4).toString('hex')}`,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      ...env,
    });
  let started: { port: number; config: Config; service: RunningService };
  try {
    started = await startOnFreePort(role, configFor);
  } catch (err) {
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const { port, config, service } = started;
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    service,
    database,
    adminToken: TEST_ADMIN_TOKEN,
    async stop() {
      await service.stop();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts `role` on a free port. Another process can bind the port drawn before the service does
 * (processes draw independently); a start that fails on it has stopped what it started, so it
 * starts again on another port, up to three times.
 */
async function startOnFreePort(role: Role, configFor: (port: number) => Config) {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const config = configFor(port);
    try {
      return { port, config, service: await startService(role, config, createLogger(config.logLevel)) };
    } catch (err) {
      if (attempt >= 3 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
}

/** The payment as `GET /api/payments/{id}` shows it once it is settled (polled until `timeoutMs`). */
export function settledPayment(baseUrl: string, paymentId: string, timeoutMs = 30_000) {
  return eventually(
    async () => {
      const p = await (await fetch(`${baseUrl}/api/payments/${paymentId}`)).json();
      return p.status === 'settled' ? p : undefined;
    },
    timeoutMs,
    100,
  );
}

/** Polls `fn` until it returns a truthy value or the deadline passes. */
export async function eventually<T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
}
