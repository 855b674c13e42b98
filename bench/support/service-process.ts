import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../src/platform/net.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import type { ChainHandle } from '../../src/platform/blockchain.js';
import { freshDatabase, type TestDatabase } from '../../test/support/database.js';
import { eventually } from '../../test/support/service.js';
import { chainEnvOf, chainHandleOf } from '../../test/support/topology.js';

export interface ServiceProcess {
  url: string;
  devChain: DevChain;
  /** The chain as the service sees it, for the test-support helpers (faucet included). */
  chain: ChainHandle;
  database: TestDatabase;
  stop(): Promise<void>;
}

/** A service process started by a benchmark: its URL, queue prefix and pid, and how to stop it. */
export interface SpawnedService {
  url: string;
  queuePrefix: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts `src/main.ts all` as its own process on the given PostgreSQL (Redis on 127.0.0.1:6379
 * unless BENCH_REDIS_URL says otherwise, a fresh queue prefix) and waits until it is ready. `env`
 * adds or overrides variables (a chain, a bucket, a concurrency). BENCH_NODE_ARGS passes flags to
 * its node, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof.
 */
export async function spawnService(opts: {
  databaseUrl: string;
  dataDir: string;
  env?: Record<string, string>;
  logLevel?: string;
}): Promise<SpawnedService> {
  const port = await freePort();
  const queuePrefix = `b${randomBytes(4).toString('hex')}`;
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // The young-generation size `npm start` and the image run with (package.json, infra/Dockerfile).
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=32', ...nodeArgs, '--import', 'tsx', 'src/main.ts', 'all'],
    {
      cwd: join(import.meta.dirname, '../..'),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PORT: String(port),
        DATA_DIR: opts.dataDir,
        LOG_LEVEL: opts.logLevel ?? 'warn',
        DATABASE_URL: opts.databaseUrl,
        DATABASE_POOL_MAX: '20',
        REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
        QUEUE_PREFIX: queuePrefix,
        // Load from one address is the point of a bench, not abuse.
        RATE_LIMITS: 'off',
        ...opts.env,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    await eventually(async () => (await fetch(`${url}/readyz`)).status === 200, 120_000, 200);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, queuePrefix, pid: child.pid!, stop };
}

/**
 * The service as `npm start` runs it (role all, its own process and event loop), on a chain and a
 * fresh PostgreSQL database owned by the benchmark, so the benchmark's client work (signing,
 * measuring) does not share a thread with the server it measures.
 */
export async function startServiceProcess(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const devChain = await startDevChain();
  const database = await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'market-bench-'));
  const service = await spawnService({ databaseUrl: database.url, dataDir, env: { ...chainEnvOf(devChain), ...env } });
  const chain = chainHandleOf(devChain);
  return {
    url: service.url,
    devChain,
    chain,
    database,
    async stop() {
      await service.stop();
      await devChain.stop();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
