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

/**
 * The service as `npm start` runs it (role all, its own process and event loop), on a chain and a
 * fresh PostgreSQL database owned by the benchmark, so the benchmark's client work (signing,
 * measuring) does not share a thread with the server it measures.
 */
export async function startServiceProcess(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const devChain = await startDevChain();
  const database = await freshDatabase();
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'market-bench-'));
  // BENCH_NODE_ARGS passes flags to the service's node, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts', 'all'], {
    cwd: join(import.meta.dirname, '../..'),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      DATABASE_URL: database.url,
      DATABASE_POOL_MAX: '20',
      REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: `b${randomBytes(4).toString('hex')}`,
      ...chainEnvOf(devChain),
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(`${url}/readyz`)).status === 200, 60_000, 200);
  const chain = chainHandleOf(devChain);
  return {
    url,
    devChain,
    chain,
    database,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      await devChain.stop();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
