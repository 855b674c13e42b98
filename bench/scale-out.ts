/**
 * Scale-out on this machine, in one run: the same work with one process of a role and with two.
 *
 *   npx tsx bench/scale-out.ts [--seconds 10] [--connections 32] [--agents 2000]
 *
 * Reads: cached reads (a bucket document through the API's embedded edge, as a CDN miss would
 * reach it) with one API process, then two, loaded by wrk (Debian's `wrk`; two wrk processes,
 * one per API, or both on the single API), next to a bare Express route sending the same bytes.
 * Workers: a full recompute of every agent's documents on a generated marketplace (bench/generate.ts
 * scaled down) with one worker process, then two, on fresh databases and buckets.
 * Everything shares PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 (test/support/topology.ts).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { freePort } from '../src/platform/net.js';
import { startTopology } from '../test/support/topology.js';
import { eventually } from '../test/support/service.js';
import { printRunInfo } from './support/run-info.js';

printRunInfo();

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    agents: { type: 'string', default: '2000' },
    only: { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const AGENTS = Number(values.agents);
const ROOT = join(import.meta.dirname, '..');

/** Requests per second over `urls`, one wrk process per URL, all at once. */
async function wrk(urls: string[]): Promise<number> {
  const per = Math.max(1, Math.floor(CONNECTIONS / urls.length));
  const outs = await Promise.all(urls.map((u) => run('wrk', ['-t1', `-c${per}`, `-d${SECONDS}s`, '--latency', u])));
  return outs.reduce((sum, o) => {
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(o.stdout)?.[1]);
    const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(o.stdout);
    if (non2xx) throw new Error(`wrk saw ${non2xx[1]} error responses:\n${o.stdout}`);
    return sum + rps;
  }, 0);
}

async function reads() {
  const PATH = '/.well-known/agent-card.json';
  const results: Record<string, number> = {};
  let bytes: Buffer | undefined;
  for (const apis of [1, 2]) {
    const topo = await startTopology({ apis, workers: 1, schedulers: 1, discardLogs: true });
    try {
      // Served by the embedded edge once the site-card job has published it (Last-Modified is the bucket's).
      for (const api of topo.apis) {
        await eventually(async () => (await fetch(`${api.url}${PATH}`)).headers.get('last-modified'), 30_000, 200);
      }
      bytes ??= Buffer.from(await (await fetch(`${topo.apis[0]!.url}${PATH}`)).arrayBuffer());
      // Both wrk processes run in either case, so the client's share of the CPU is the same.
      const targets = apis === 1 ? [topo.apis[0]!.url!, topo.apis[0]!.url!] : topo.apis.map((a) => a.url!);
      await wrk(targets.map((t) => `${t}${PATH}`)); // warm-up
      results[`${apis} api`] = await wrk(targets.map((t) => `${t}${PATH}`));
      console.log(`cached read, ${apis} API process(es): ${results[`${apis} api`]!.toFixed(0)} req/s`);
    } finally {
      await topo.stop();
    }
  }
  // The baseline: bare Express, one process, same bytes, same two wrk processes.
  const dir = mkdtempSync(join(tmpdir(), 'market-bare-'));
  const file = join(dir, 'body');
  writeFileSync(file, bytes!);
  const port = await freePort();
  const bare = spawn(process.execPath, ['--import', 'tsx', 'bench/support/bare-express.ts', String(port), file], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  try {
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/bare`)).ok, 20_000, 100);
    const url = `http://127.0.0.1:${port}/bare`;
    await wrk([url, url]);
    results.bare = await wrk([url, url]);
    console.log(`bare Express route, 1 process, same ${bytes!.length} bytes: ${results.bare.toFixed(0)} req/s`);
  } finally {
    bare.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `\nreads: 2 APIs / 1 API = ${(results['2 api']! / results['1 api']!).toFixed(2)}x; 1 API / bare Express = ${(results['1 api']! / results.bare!).toFixed(2)}`,
  );
}

const CORES = (await import('node:os')).availableParallelism();
const TICK = 100; // USER_HZ

/** CPU seconds used so far by the given processes, PostgreSQL, Redis, this process, and idle. */
function cpu(workerPids: number[]) {
  const ticks = (pid: number) => {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TICK; // utime stime cutime cstime
    } catch {
      return 0;
    }
  };
  const byName = (name: string) =>
    readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return readFileSync(`/proc/${d}/comm`, 'utf8').trim().startsWith(name);
        } catch {
          return false;
        }
      })
      .reduce((sum, d) => sum + ticks(Number(d)), 0);
  const idle = Number(readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/)[4]) / TICK;
  return {
    workers: workerPids.reduce((s, p) => s + ticks(p), 0),
    postgres: byName('postgres'),
    redis: byName('redis-server'),
    bench: ticks(process.pid),
    idle,
  };
}

async function workers() {
  const times: Record<number, number> = {};
  const second: Record<number, number> = {};
  for (const n of [1, 2]) {
    const topo = await startTopology({ apis: 0, workers: n, schedulers: 0, discardLogs: true });
    try {
      await run(
        process.execPath,
        [
          '--import',
          'tsx',
          'bench/generate.ts',
          '--agents',
          String(AGENTS),
          '--posts',
          String(AGENTS * 10),
          '--purchases',
          String(AGENTS * 50),
          '--database-url',
          topo.database.url,
        ],
        { cwd: ROOT },
      );
      await topo.enqueue('population-stats');
      await eventually(async () => (await topo.pendingJobs()) === 0, 600_000, 200);
      // One full recompute: its time and each process group's CPU share over it.
      const timed = async () => {
        const before = cpu(topo.workers.map((w) => w.child.pid!));
        const started = performance.now();
        await topo.enqueue('recompute-all');
        await eventually(async () => (await topo.pendingJobs()) === 0, 3_600_000, 200);
        const seconds = (performance.now() - started) / 1000;
        const after = cpu(topo.workers.map((w) => w.child.pid!));
        const share = (k: keyof typeof after) =>
          `${(after[k] - before[k]).toFixed(0)} s (${(((after[k] - before[k]) / (seconds * CORES)) * 100).toFixed(0)}%)`;
        return { seconds, share };
      };
      const first = await timed();
      times[n] = first.seconds;
      console.log(
        `  CPU during the recompute (of ${CORES} cores × ${first.seconds.toFixed(0)} s): workers ${first.share('workers')}, PostgreSQL ${first.share('postgres')}, s3rver and this client ${first.share('bench')}, Redis ${first.share('redis')}, idle ${first.share('idle')}`,
      );
      const { rows } = await topo.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM published_documents WHERE key LIKE 'api/agents/%'",
      );
      console.log(
        `recompute of ${AGENTS} agents, ${n} worker process(es): ${first.seconds.toFixed(1)} s (${(AGENTS / first.seconds).toFixed(0)} agents/s, ${rows[0]!.n} documents written)`,
      );
      // Second pass: the same recompute, every document unchanged, so the bucket is not written
      // and what is left is the workers' and PostgreSQL's share.
      const again = await timed();
      second[n] = again.seconds;
      console.log(
        `  second pass (unchanged): ${again.seconds.toFixed(1)} s (${(AGENTS / again.seconds).toFixed(0)} agents/s); CPU: workers ${again.share('workers')}, PostgreSQL ${again.share('postgres')}, this client ${again.share('bench')}, idle ${again.share('idle')}`,
      );
    } finally {
      await topo.stop();
    }
  }
  console.log(
    `\nworkers: 2 workers / 1 worker = ${(times[1]! / times[2]!).toFixed(2)}x faster on the first pass, ${(second[1]! / second[2]!).toFixed(2)}x on the second`,
  );
}

if (!values.only || values.only === 'reads') await reads();
if (!values.only || values.only === 'workers') await workers();
process.exit(0);
