import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { freePort } from '../../src/platform/net.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { startS3rver } from '../../src/platform/object-store.js';
import type { ChainHandle } from '../../src/platform/blockchain.js';
import { freshDatabase, type TestDatabase } from './database.js';
import { eventually } from './service.js';
import { TEST_REDIS_URL } from './env.js';
import { chainEnvOf, chainHandleOf } from './topology.js';

const ROOT = join(import.meta.dirname, '../..');
export const CHILD_ADMIN_TOKEN = 'child-admin-token-0123456789';

/**
 * What a service process runs against, each outside it and owned by the test: an anvil chain with
 * USDC and the identity registry deployed, a fresh PostgreSQL database, a Redis queue prefix of
 * its own and an s3rver bucket. Service processes started on the same parts share all state, so a
 * process can be killed and another started where it left off.
 */
export interface ServiceParts {
  devChain: DevChain;
  /** The chain as the test-support helpers expect it (faucet included). */
  chain: ChainHandle;
  database: TestDatabase;
  /** A pool on the database, for assertions. */
  db: pg.Pool;
  queuePrefix: string;
  /** The environment that points a service process at these parts (no port, no log level). */
  env: Record<string, string>;
  /** Stops the bucket and the chain, drops the database and deletes the queue prefix's keys. */
  stop(): Promise<void>;
}

export async function startServiceParts(): Promise<ServiceParts> {
  const undo: Array<() => Promise<unknown> | unknown> = [];
  const unwind = async () => {
    for (const fn of undo.reverse())
      await Promise.resolve()
        .then(fn)
        .catch(() => undefined);
  };
  try {
    const database = await freshDatabase();
    undo.push(() => database.drop());
    const devChain = await startDevChain();
    undo.push(() => devChain.stop());
    const dir = mkdtempSync(join(tmpdir(), 'market-child-'));
    undo.push(() => rmSync(dir, { recursive: true, force: true }));
    const bucket = await startS3rver(join(dir, 'bucket'), 'market-public');
    undo.push(() => bucket.stop());
    const db = new pg.Pool({ connectionString: database.url, max: 3 });
    undo.push(() => db.end());
    const queuePrefix = `c${randomBytes(4).toString('hex')}`;
    undo.push(() => deleteQueueKeys(queuePrefix));
    // One signing key for every process on these parts: tokens stay valid across a restart.
    const jwtKey = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const env: Record<string, string> = {
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: database.url,
      DATABASE_POOL_MAX: '10',
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queuePrefix,
      S3_ENDPOINT: bucket.endpoint,
      S3_BUCKET: 'market-public',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      SERVE_BUCKET: 'true',
      ...chainEnvOf(devChain),
      JWT_PRIVATE_KEY: jwtKey,
      ADMIN_TOKEN: CHILD_ADMIN_TOKEN,
    };
    return { devChain, chain: chainHandleOf(devChain), database, db, queuePrefix, env, stop: unwind };
  } catch (err) {
    await unwind();
    throw err;
  }
}

async function deleteQueueKeys(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A service process (`node src/main.ts <role>`, as `npm start` runs it) started by a test. */
export interface ServiceChild {
  url: string;
  port: number;
  pid: number;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last log lines it wrote (pino JSON, parsed), for failure messages. */
  tail(n?: number): Record<string, unknown>[];
  /** Its resident set size now, from /proc (bytes). */
  rss(): number;
  /** The heap it still uses after a full garbage collection (bytes); needs `heapProbe`. */
  liveHeap(): Promise<number>;
  /** Sends a signal and waits for the process to exit. */
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, as an orchestrator would; SIGKILL if it has not exited after 15 s. */
  stop(): Promise<void>;
}

const alive = new Set<ChildProcess>();
let exitHookInstalled = false;

export interface SpawnOptions {
  port?: number;
  role?: string;
  logLevel?: string;
  readyTimeoutMs?: number;
  /** Sees every log line (parsed), e.g. to keep the few a test reports on. */
  onLog?: (line: Record<string, unknown>) => void;
  /** Preload test/support/heap-probe.ts, so `liveHeap()` can measure what the process keeps. */
  heapProbe?: boolean;
}

/**
 * Starts the service as its own process on `env` and waits until `/readyz` answers 200. Its output
 * is always read (an unread pipe would block its logger), parsed as JSON lines, and
 * only the last lines are kept, so a long run costs the test process no memory.
 */
export async function spawnServiceChild(env: Record<string, string>, opts: SpawnOptions = {}): Promise<ServiceChild> {
  const port = opts.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const probe = opts.heapProbe ? ['--expose-gc', '--import', './test/support/heap-probe.ts'] : [];
  // The young-generation size `npm start` and the image run with (package.json, infra/Dockerfile).
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=32', '--import', 'tsx', ...probe, 'src/main.ts', opts.role ?? 'all'],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH!,
        HOME: process.env.HOME ?? '/tmp',
        PUBLIC_BASE_URL: url,
        LOG_LEVEL: opts.logLevel ?? 'info',
        ...env,
        PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  alive.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A test process that dies (or exits with mocha's --exit) must not leave services running.
    process.on('exit', () => {
      for (const c of alive) c.kill('SIGKILL');
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      alive.delete(child);
      resolve({ code, signal });
    }),
  );
  const lines: Record<string, unknown>[] = [];
  let heapProbed: ((line: Record<string, unknown>) => void) | undefined;
  let partial = '';
  const onData = (chunk: Buffer) => {
    partial += chunk.toString();
    const parts = partial.split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      if (!line) continue;
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = { msg: line };
      }
      const msg = String(parsed.msg);
      if (msg === 'heap probe') heapProbed?.(parsed);
      opts.onLog?.(parsed);
      lines.push(parsed);
      if (lines.length > 400) lines.splice(0, 200);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);

  const kill = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  const node: ServiceChild = {
    url,
    port,
    pid: child.pid!,
    child,
    exited,
    tail: (n = 20) => lines.slice(-n),
    rss: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = /^VmRSS:\s+(\d+) kB/m.exec(status);
      if (!kb) throw new Error(`no VmRSS for ${child.pid}`);
      return Number(kb[1]) * 1024;
    },
    async liveHeap() {
      if (!opts.heapProbe) throw new Error('liveHeap needs a service started with heapProbe');
      const line = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no heap probe answer within 10 s')), 10_000);
        heapProbed = (l) => {
          clearTimeout(timer);
          heapProbed = undefined;
          resolve(l);
        };
        child.kill('SIGUSR2');
      });
      if (!line.collected) throw new Error('heap probe could not collect garbage (no --expose-gc)');
      return Number(line.heapUsed);
    },
    kill,
    async stop() {
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await kill('SIGTERM');
      clearTimeout(timer);
    },
  };
  let ready = false;
  try {
    // A process that dies while starting fails at once, not after the readiness deadline.
    const died = exited.then((r) => {
      if (!ready)
        throw new Error(`service exited (${r.code ?? r.signal}) before it was ready: ${JSON.stringify(node.tail(8))}`);
    });
    died.catch(() => undefined);
    await Promise.race([
      eventually(
        async () => ready || (await fetch(`${url}/readyz`)).status === 200,
        opts.readyTimeoutMs ?? 90_000,
        100,
      ),
      died,
    ]);
    ready = true;
  } catch (err) {
    ready = true;
    await kill('SIGKILL');
    throw err;
  }
  return node;
}
