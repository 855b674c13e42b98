import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import pg from 'pg';
import { Redis } from 'ioredis';
import { freePort } from '../../src/platform/net.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { openObjectStore, startS3rver, type ObjectStore } from '../../src/platform/object-store.js';
import type { ChainHandle } from '../../src/platform/blockchain.js';
import { createLogger } from '../../src/platform/logger.js';
import { QUEUE_NAMES } from '../../src/platform/queues.js';
import { JOBS } from '../../jobs/index.js';
import { freshDatabase, type TestDatabase } from './database.js';
import { eventually } from './service.js';
import { TEST_REDIS_URL } from './env.js';

const ROOT = join(import.meta.dirname, '../..');
// anvil's default accounts 3..6 (mnemonic "test test ... junk"; public, funded with test ETH).
/** Funded anvil accounts for further facilitator processes (each process needs its own key). */
export const EXTRA_ANVIL_KEYS = [
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
  '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e',
] as const;
export const TOPOLOGY_ADMIN_TOKEN = 'topology-admin-token-0123456789';

export interface ServiceNode {
  role: 'api' | 'worker' | 'scheduler' | 'edge';
  name: string;
  /** For api and edge: where it listens. */
  url?: string;
  /** For a worker or the scheduler: where it serves /metrics (METRICS_PORT, one per process on this host). */
  metricsUrl?: string;
  /** JSON log lines the process wrote (pino), parsed. */
  logs: Record<string, unknown>[];
  child: ChildProcess;
  exited: Promise<number | null>;
}

export interface Topology {
  apis: ServiceNode[];
  workers: ServiceNode[];
  schedulers: ServiceNode[];
  database: TestDatabase;
  /** A pool on the shared database, for assertions. */
  db: pg.Pool;
  devChain: DevChain;
  /** The chain as the helpers in test/support expect it (faucet included). */
  chain: ChainHandle;
  /** The shared bucket, as the processes see it. */
  store: ObjectStore;
  /** The nginx edge (CDN routing), when asked for. */
  edgeUrl?: string;
  /** Queue counts across the shared Redis prefix. */
  pendingJobs(): Promise<number>;
  /** Adds a job by name to its queue, as the scheduler or scripts/ops.ts would. */
  enqueue(name: string, data?: unknown): Promise<void>;
  /** Stops one process (SIGTERM, as an orchestrator would) and waits for it to exit. */
  stopNode(node: ServiceNode): Promise<number | null>;
  stop(): Promise<void>;
}

export interface TopologyOptions {
  /** Also run infra/edge/edge.conf in nginx in front of the APIs and the bucket. */
  edge?: boolean;
  apis?: number;
  workers?: number;
  schedulers?: number;
  env?: Record<string, string>;
  /** Environment of one role only, over `env`. */
  roleEnv?: Partial<Record<'api' | 'worker' | 'scheduler', Record<string, string>>>;
  /** At least info: a process counts as started when it logs `skill-market <role> started`. */
  logLevel?: string;
  /** Stop parsing each process's log lines once it has started (benchmarks: keep the client light). */
  discardLogs?: boolean;
  /** A database already migrated and filled (bench/generate.ts) instead of a fresh one; dropped on stop too. */
  database?: TestDatabase;
  /** Run each role with the heap flags of its `start:<role>` script in package.json, as deployed. */
  productionHeap?: boolean;
}

/**
 * The V8 memory flags (`--max-old-space-size=…`, `--max-semi-space-size=…`) of a role's production
 * start script, `npm run start:<role>`: the one place each role's heap cap is stated.
 */
export function productionHeapFlags(role: 'api' | 'worker' | 'scheduler'): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const script = pkg.scripts[`start:${role}`];
  if (!script) throw new Error(`package.json has no start:${role} script`);
  return script.split(/\s+/).filter((word) => /^--max-(old|semi)-space-size=\d+$/.test(word));
}

/** The environment that points a service process at a dev chain owned by the test or bench. */
export function chainEnvOf(devChain: DevChain): Record<string, string> {
  return {
    RPC_URL: devChain.rpcUrl,
    CHAIN_ID: String(devChain.chainId),
    USDC_ADDRESS: devChain.usdc.address,
    IDENTITY_REGISTRY_ADDRESS: devChain.identityRegistry,
    TREASURY_ADDRESS: devChain.accounts.treasury.address,
    FACILITATOR_PRIVATE_KEY: devChain.accounts.facilitator.privateKey,
    CHAIN_POLL_INTERVAL_MS: '10',
  };
}

/** The chain handle test-support helpers take, for a dev chain owned by the test. */
export function chainHandleOf(devChain: DevChain): ChainHandle {
  return {
    rpcUrl: devChain.rpcUrl,
    chainId: devChain.chainId,
    network: `eip155:${devChain.chainId}`,
    embedded: false,
    usdc: devChain.usdc,
    identityRegistry: devChain.identityRegistry,
    treasury: devChain.accounts.treasury.address,
    facilitatorPrivateKey: undefined,
    publicClient: devChain.publicClient,
    faucet: devChain.faucet,
    ping: () => devChain.publicClient.getBlockNumber(),
    close: async () => undefined,
  } as unknown as ChainHandle;
}

/**
 * The production topology on this machine: N API processes, M workers and schedulers, each its own
 * `node src/main.ts <role>` process, sharing one real PostgreSQL database, one Redis queue prefix,
 * one S3-compatible bucket (s3rver) and one chain (anvil), as infra/compose.yaml wires them.
 */
export async function startTopology(opts: TopologyOptions = {}): Promise<Topology> {
  const database = opts.database ?? (await freshDatabase());
  const devChain = await startDevChain();
  const bucketDir = mkdtempSync(join(tmpdir(), 'market-topology-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'market-topology-data-'));
  const s3 = await startS3rver(bucketDir, 'market-public');
  const apiPorts: number[] = [];
  for (let i = 0; i < (opts.apis ?? 2); i++) apiPorts.push(await freePort());
  const jwtKey = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const prefix = `topo${randomBytes(4).toString('hex')}`;
  const shared: Record<string, string> = {
    NODE_ENV: 'development',
    // The development keys every process shares (the receipt key the site card names), kept apart
    // from the repository's own .data.
    DATA_DIR: dataDir,
    LOG_LEVEL: opts.logLevel ?? 'info',
    // Documents link to one public origin (the CDN's in production), whichever API rendered them.
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPorts[0] ?? 3000}`,
    DATABASE_URL: database.url,
    DATABASE_POOL_MAX: '10',
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    // Every simulated agent signs in and publishes from 127.0.0.1.
    RATE_LIMITS: 'off',
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: 'market-public',
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    SERVE_BUCKET: 'true',
    ...chainEnvOf(devChain),
    // Every API must verify every other API's tokens: one signing key for all.
    JWT_PRIVATE_KEY: jwtKey,
    ADMIN_TOKEN: TOPOLOGY_ADMIN_TOKEN,
    ...opts.env,
  };

  // Every process that can send settlements (APIs, and workers through the retry job) gets its own
  // key, as infra/compose.yaml asks: processes sharing a key race for its nonces, and a nonce one of
  // them skips leaves the other's later transactions waiting in the mempool (seen in this test).
  const keys = [devChain.accounts.facilitator.privateKey, ...EXTRA_ANVIL_KEYS];
  let nextKey = 0;
  const nodes: ServiceNode[] = [];
  const edges: ServiceNode[] = [];
  const counters: Record<string, number> = {};
  const spawnNode = async (
    role: 'api' | 'worker' | 'scheduler',
    extraEnv: Record<string, string> = {},
    port?: number,
  ): Promise<ServiceNode> => {
    counters[role] = (counters[role] ?? 0) + 1;
    const name = `${role}-${counters[role]}`;
    const listenPort = role === 'api' ? (port ?? (await freePort())) : undefined;
    const metricsPort = role === 'api' ? undefined : await freePort();
    // TOPOLOGY_NODE_ARGS passes flags to every service process, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof.
    const nodeArgs = [
      ...(opts.productionHeap ? productionHeapFlags(role) : []),
      ...(process.env.TOPOLOGY_NODE_ARGS ?? '').split(' ').filter(Boolean),
    ];
    const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts', role], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH!,
        HOME: process.env.HOME ?? '/tmp',
        ...shared,
        ...(role === 'scheduler' ? {} : { FACILITATOR_PRIVATE_KEY: keys[nextKey++ % keys.length]! }),
        ...(listenPort ? { PORT: String(listenPort) } : {}),
        ...(metricsPort ? { METRICS_PORT: String(metricsPort) } : {}),
        ...opts.roleEnv?.[role],
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const node: ServiceNode = {
      role,
      name,
      url: listenPort ? `http://127.0.0.1:${listenPort}` : undefined,
      metricsUrl: metricsPort ? `http://127.0.0.1:${metricsPort}/metrics` : undefined,
      logs: [],
      child,
      exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    };
    let partial = '';
    const onData = (chunk: Buffer) => {
      partial += chunk.toString();
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        try {
          node.logs.push(JSON.parse(line));
        } catch {
          node.logs.push({ msg: line });
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    nodes.push(node);
    await eventually(
      async () => {
        if (child.exitCode !== null)
          throw new Error(`${name} exited with ${child.exitCode}: ${JSON.stringify(node.logs.slice(-5))}`);
        return node.logs.some((l) => typeof l.msg === 'string' && l.msg.endsWith(' started'));
      },
      90_000,
      100,
    ).catch((err) => {
      child.kill('SIGKILL');
      throw err;
    });
    if (opts.discardLogs) {
      for (const stream of [child.stdout!, child.stderr!]) {
        stream.removeAllListeners('data');
        stream.resume();
      }
    }
    return node;
  };

  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  const queues = QUEUE_NAMES.map((q) => new Queue(q, { connection: redis, prefix }));
  const store = await openObjectStore({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    bucket: 'market-public',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    forcePathStyle: true,
    embeddedDir: bucketDir,
    log: createLogger('silent'),
  });
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  const stopNode = async (node: ServiceNode) => {
    if (node.child.exitCode === null) node.child.kill('SIGTERM');
    const timer = setTimeout(() => node.child.kill('SIGKILL'), 15_000);
    const code = await node.exited;
    clearTimeout(timer);
    return code;
  };
  const topology: Topology = {
    apis: [],
    workers: [],
    schedulers: [],
    database,
    db,
    devChain,
    chain: chainHandleOf(devChain),
    store,
    async pendingJobs() {
      let n = 0;
      for (const q of queues) {
        const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
        n += Object.values(c).reduce((a, b) => a + b, 0);
      }
      return n;
    },
    async enqueue(name, data = {}) {
      const job = JOBS[name];
      if (!job) throw new Error(`unknown job ${name}`);
      const payload = name === 'recompute-all' ? { run: `t${Date.now()}`, ...(data as object) } : data;
      await queues[QUEUE_NAMES.indexOf(job.queue)]!.add(name, payload, { jobId: `topology-${name}-${Date.now()}` });
    },
    stopNode,
    async stop() {
      // The order an orchestrator would use: schedulers, then APIs (drain), then workers.
      for (const group of [edges, topology.schedulers, topology.apis, topology.workers])
        await Promise.all(group.map(stopNode));
      for (const n of nodes) n.child.kill('SIGKILL');
      await Promise.all(queues.map((q) => q.close()));
      redis.disconnect();
      await store.close();
      await db.end();
      await s3.stop();
      await devChain.stop();
      await database.drop();
      rmSync(bucketDir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    // Start one first so migrations run once under the lock before the rest race for it.
    const first = apiPorts.length ? await spawnNode('api', {}, apiPorts[0]) : undefined;
    if (first) topology.apis.push(first);
    await Promise.all([
      ...apiPorts.slice(1).map((p) => spawnNode('api', {}, p).then((n) => topology.apis.push(n))),
      ...Array.from({ length: opts.workers ?? 2 }, () => spawnNode('worker').then((n) => topology.workers.push(n))),
      ...Array.from({ length: opts.schedulers ?? 1 }, () =>
        spawnNode('scheduler').then((n) => topology.schedulers.push(n)),
      ),
    ]);
    if (opts.edge) {
      const edge = await startEdge(
        topology.apis.map((a) => new URL(a.url!).host),
        new URL(s3.endpoint).host,
        bucketDir,
      );
      topology.edgeUrl = edge.url;
      nodes.push(edge.node);
      edges.push(edge.node);
    }
  } catch (err) {
    await topology.stop().catch(() => undefined);
    throw err;
  }
  return topology;
}

/**
 * nginx running infra/edge/edge.conf unchanged but for the addresses: compose's service names
 * become this machine's ports, and the cache and temp files go to a temp directory.
 */
export async function startEdge(
  apiHosts: string[],
  bucketHost: string,
  dir: string,
): Promise<{ url: string; node: ServiceNode }> {
  const port = await freePort();
  const site = readFileSync(join(ROOT, 'infra/edge/edge.conf'), 'utf8')
    .replace(
      / {2}server api-1:3000[^\n]*\n {2}server api-2:3000[^\n]*\n/,
      apiHosts.map((h) => `  server ${h} max_fails=3 fail_timeout=5s;\n`).join(''),
    )
    .replaceAll('minio:9000', bucketHost)
    .replace('/var/cache/nginx/market', join(dir, 'edge-cache'))
    .replace('listen 80;', `listen 127.0.0.1:${port};`);
  if (site.includes('api-1:3000')) throw new Error('edge.conf: could not rewrite the API upstream');
  writeFileSync(join(dir, 'edge-site.conf'), site);
  const t = (name: string) => join(dir, `edge-${name}`);
  writeFileSync(
    join(dir, 'edge-nginx.conf'),
    // As root, nginx would run its workers as nobody, who cannot write the cache in our temp dir.
    `${process.getuid?.() === 0 ? 'user root root; ' : ''}worker_processes 1; pid ${t('pid')}; error_log ${t('error.log')} warn; daemon off;
events { worker_connections 512; }
http { access_log off; client_body_temp_path ${t('body')}; proxy_temp_path ${t('proxy')}; fastcgi_temp_path ${t('fcgi')};
uwsgi_temp_path ${t('uwsgi')}; scgi_temp_path ${t('scgi')}; include ${join(dir, 'edge-site.conf')}; }`,
  );
  const child = spawn('nginx', ['-c', join(dir, 'edge-nginx.conf'), '-p', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  const node: ServiceNode = {
    role: 'edge',
    name: 'edge',
    url: `http://127.0.0.1:${port}`,
    logs: [],
    child,
    exited: new Promise((r) => child.once('exit', r)),
  };
  child.stderr!.on('data', (d) => node.logs.push({ msg: d.toString() }));
  child.once('error', (err) => node.logs.push({ msg: `nginx could not start: ${err.message} (install nginx-light)` }));
  await eventually(
    async () => {
      if (child.exitCode !== null || node.logs.some((l) => String(l.msg).includes('could not start')))
        throw new Error(`nginx: ${JSON.stringify(node.logs)}`);
      return (await fetch(`${node.url}/healthz`)).ok;
    },
    20_000,
    100,
  );
  return { url: node.url!, node };
}
