/**
 * The skills-index publish on a generated marketplace, with every role as deployed (one API, two
 * workers, a scheduler, each its own process with its production heap cap): the start-up jobs
 * first, then a `skills-index` job (the top index and its shards, built and published by the
 * workers), then the index and the discovery reads through the API. Prints each step's time, each
 * read's status, time and size, and each process's peak resident set (a role that ran out of heap
 * shows as exited).
 *
 *   npx tsx bench/generate.ts                         # prints DATABASE_URL=…
 *   npx tsx bench/skills-index.ts --database-url postgres://…
 */
import { parseArgs } from 'node:util';
import { startTopology } from '../test/support/topology.js';
import { eventually } from '../test/support/service.js';
import { printRunInfo } from './support/run-info.js';
import {
  BATCH_JOBS_HELD,
  GENERATED_PUBLIC_BASE_URL,
  keptDatabase,
  peakRssMiB,
} from './support/generated-marketplace.js';

printRunInfo();

const { values } = parseArgs({ options: { 'database-url': { type: 'string' } } });
const url = values['database-url'];
if (!url) throw new Error('--database-url is required (run bench/generate.ts first)');
const topology = await startTopology({
  // The generated database is the caller's: kept when the bench stops.
  database: keptDatabase(url),
  apis: 1,
  workers: 2,
  schedulers: 1,
  productionHeap: true,
  discardLogs: true,
  // Only the jobs this bench asks for, besides the start-up ones.
  env: { WORKER_CONCURRENCY: '4', ...BATCH_JOBS_HELD, ...GENERATED_PUBLIC_BASE_URL },
});
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);
try {
  let started = performance.now();
  await eventually(async () => (await topology.pendingJobs()) === 0, 3_600_000, 500);
  console.log(`start-up jobs (population statistics, site documents, audits): ${seconds(started)} s`);
  started = performance.now();
  await topology.enqueue('skills-index');
  await eventually(async () => (await topology.pendingJobs()) === 0, 3_600_000, 500);
  console.log(`skills-index publish (top and shards): ${seconds(started)} s`);
  const api = topology.apis[0]!.url!;
  for (const path of [
    '/.well-known/agent-skills/index.json',
    `/api/discovery/search?q=${encodeURIComponent(`data pipeline ${Date.now()}`)}`,
    '/api/discovery/search?q=agent',
    '/api/discovery/posts.json?limit=200',
    '/api/discovery/agents.json?limit=200',
  ]) {
    const t0 = performance.now();
    const res = await fetch(`${api}${path}`);
    const body = await res.text();
    const total = path.endsWith('index.json') ? `, total ${(JSON.parse(body) as { total?: number }).total}` : '';
    console.log(`${res.status} ${path}: ${(performance.now() - t0).toFixed(0)} ms, ${body.length} bytes${total}`);
  }
  const nodes = [...topology.apis, ...topology.workers, ...topology.schedulers];
  console.log(
    `peak RSS: ${nodes.map((n) => `${n.name} ${peakRssMiB(n.child.pid).toFixed(0)} MiB${n.child.exitCode === null ? '' : ' (exited)'}`).join(', ')}`,
  );
} finally {
  await topology.stop();
}
