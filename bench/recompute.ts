/**
 * Full recompute of every agent's documents: time, worker peak memory, documents written versus
 * skipped as unchanged.
 *
 *   npx tsx bench/generate.ts                      # prints DATABASE_URL=… (100k agents, 1M posts, 5M purchases)
 *   npx tsx bench/recompute.ts --database-url postgres://… [--concurrency 4] [--passes 2] [--base-url https://market.example] [--pass-timeout-minutes 240]
 *
 * Runs the service as its own process (role all: embedded chain, the given PostgreSQL, Redis on
 * 127.0.0.1:6379) with the bucket outside it, as deployed (an s3rver in this process, so the
 * service's peak memory is the worker's own); queues the `recompute-all` job and waits for the
 * documents queue to drain. The first pass writes what was never published; later passes show the unchanged skip.
 * Before the first pass, the start-up jobs, a skills-index publish and the Bazaar's listings run to
 * the end (on a marketplace never published, its first: every shard and 620,000 listings at 100k).
 * Peak memory is the service process's VmHWM (resident high-water mark) from /proc. Each pass starts
 * after a VACUUM (ANALYZE), which autovacuum (off on the team's machines) would have run.
 *
 * With --sample-pages N a pass recomputes N pages of 100 agents, spread evenly over the agents by
 * id, through the stages of the full recompute in their order: every agent's similarity features
 * rebuilt (here, timed on their own), the sample's similar pages (the first alone: it waits for
 * the worker's snapshot of every signature, loaded once a rebuild, which a full pass shares among
 * all its pages), the population quantiles (timed on their own), the sample's document pages (the
 * same jobs and payloads as recompute-all's). The 15-minute population statistics are held. For a
 * catalogue whose full pass takes hours (300k agents): it prints the cost an agent of each stage
 * and the pass it projects, the whole-catalogue stages (features, snapshot, quantiles) plus the
 * pages' cost an agent (the similar pages' over those after the first) times the agents.
 * --sample-offset K takes the pages K, K + step, … instead: another run on the same marketplace
 * then makes a first pass over agents the first run rendered none of.
 * With --hold-catch-up the projections are held for the whole run (this script takes their advisory
 * locks) and the passes start once the start-up jobs are done: a marketplace never published then
 * need not first publish its listings (at 300k agents, hours on one process).
 */
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { startS3rver } from '../src/platform/object-store.js';
import { DEFAULT_JOB_OPTIONS } from '../src/platform/queues.js';
import { BATCH_STATEMENT_TIMEOUT_MS, openDatabase, withStatementTimeout } from '../src/data/db.js';
import { createLogger } from '../src/platform/logger.js';
import { pagesOf } from '../src/domain/agents/full-recompute.use-cases.js';
import { rebuildAllFeatures } from '../src/domain/agents/similar.js';
import { recomputePopulationQuantiles } from '../src/domain/agents/population-stats.use-cases.js';
import { AGENT_BATCH_SIZE } from '../jobs/agent-documents.job.js';
import { eventually } from '../test/support/service.js';
import { spawnService } from './support/service-process.js';
import { printRunInfo } from './support/run-info.js';
import {
  BATCH_JOBS_HELD,
  holdProjections,
  listingsSettled,
  peakRssMiB,
  vacuumAnalyze,
} from './support/generated-marketplace.js';

printRunInfo();

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    passes: { type: 'string', default: '2' },
    'base-url': { type: 'string', default: 'https://market.example' },
    // A first pass at 100k agents takes over an hour on two cores.
    'pass-timeout-minutes': { type: 'string', default: '240' },
    'sample-pages': { type: 'string' },
    'sample-offset': { type: 'string', default: '0' },
    'hold-catch-up': { type: 'boolean', default: false },
  },
});
const url = values['database-url'];
if (!url) throw new Error('--database-url is required (run bench/generate.ts first)');
const samplePages = values['sample-pages'] === undefined ? undefined : Number(values['sample-pages']);
// The first similar page is timed apart (the signature snapshot), so a sample needs at least one more.
if (samplePages !== undefined && !(Number.isInteger(samplePages) && samplePages > 1))
  throw new Error('--sample-pages takes a whole number of pages above 1');

const dataDir = mkdtempSync(join(tmpdir(), 'market-recompute-'));
// The receipt and card keys the service generates on its first run against this database are kept
// beside it, so a later run signs the same receipts and cards: with new keys every reputation
// mirror and card differs, and a second run would sign and write everything again.
const keysDir = join(tmpdir(), `market-recompute-keys-${new URL(url).pathname.slice(1)}`);
if (existsSync(keysDir)) cpSync(keysDir, join(dataDir, 'keys'), { recursive: true });
const bucket = await startS3rver(join(dataDir, 'bucket'), 'market-public');
const service = await spawnService({
  databaseUrl: url,
  dataDir,
  env: {
    WORKER_CONCURRENCY: values.concurrency!,
    S3_ENDPOINT: bucket.endpoint,
    S3_BUCKET: 'market-public',
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    // Documents link to the public base URL: fixed, so a later run finds them unchanged.
    PUBLIC_BASE_URL: values['base-url']!,
    // The workers' heap cap (npm run start:worker, infra/compose.yaml).
    NODE_OPTIONS: '--max-old-space-size=640',
    // A sample times the population quantiles itself: the 15-minute run of them is held.
    ...(samplePages === undefined ? {} : BATCH_JOBS_HELD),
  },
});
cpSync(join(dataDir, 'keys'), keysDir, { recursive: true });
const prefix = service.queuePrefix;
const db = new pg.Client({ connectionString: url });
await db.connect();
const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
// The service's job options: a sample's pages retry a failed attempt as recompute-all's do.
const queue = new Queue('documents', { connection: redis, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
const peakMb = () => peakRssMiB(service.pid);
const stats = async () =>
  (
    await db.query<{ docs: number; writes: number }>(
      `SELECT count(*)::int AS docs, coalesce(sum(publish_count), 0)::int AS writes FROM published_documents WHERE key LIKE 'api/agents/%'`,
    )
  ).rows[0]!;

/** The sample's pages of agents, spread evenly over the agents by id, and a connection for the whole-catalogue stages. */
interface Sample {
  pages: string[][];
  agents: number;
  database: Awaited<ReturnType<typeof openDatabase>>;
}

/**
 * One pass over the sample, stage by stage as recompute-all runs them; the queued stages' jobs
 * carry recompute-all's payloads. Returns each stage's wall time (s): the pages' from the first
 * one's start to the last one's end.
 */
async function samplePass(sample: Sample, pass: number, untilDrained: () => Promise<unknown>) {
  const timed = async <T>(fn: () => Promise<T>) => {
    const t0 = performance.now();
    const value = await fn();
    return { value, s: (performance.now() - t0) / 1000 };
  };
  const { db: kdb } = sample.database;
  const features = await timed(() => withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, () => rebuildAllFeatures(kdb)));
  const addPages = (name: string, data: Record<string, unknown>, pages = sample.pages) =>
    queue.addBulk(
      pages.map((agentIds) => ({
        name,
        data: { agentIds, ...data },
        opts: { jobId: `${name}-${agentIds[0]}-bench${pass}-${Date.now()}` },
      })),
    );
  // A stage's pages from the first one's start to the last one's end: the queue drains later
  // when other jobs (a periodic one) are running beside them.
  const pagesSpan = async (name: string, since: number) => {
    const jobs = (await queue.getJobs(['completed'])).filter((j) => j?.name === name && (j.processedOn ?? 0) >= since);
    if (!jobs.length) return 0;
    return (Math.max(...jobs.map((j) => j.finishedOn ?? 0)) - Math.min(...jobs.map((j) => j.processedOn ?? 0))) / 1000;
  };
  // The first similar page alone: it waits for the worker's snapshot of every signature, loaded
  // once a rebuild by each worker process, which a full pass shares among all its pages.
  const [first, ...rest] = sample.pages;
  const snapshotSince = Date.now();
  await addPages('agent-similar-batch', {}, first ? [first] : []);
  await untilDrained();
  const snapshotS = await pagesSpan('agent-similar-batch', snapshotSince);
  const similarSince = Date.now();
  await addPages('agent-similar-batch', {}, rest);
  await untilDrained();
  const similarS = await pagesSpan('agent-similar-batch', similarSince);
  const quantiles = await timed(() => recomputePopulationQuantiles({ db: kdb }));
  const documentsSince = Date.now();
  await addPages('agent-documents-batch', { featuresFresh: true, similarStored: true, skipUnchanged: true });
  await untilDrained();
  return {
    rebuilt: features.value.rebuilt,
    featuresS: features.s,
    snapshotS,
    similarS,
    similarAgents: rest.reduce((n, p) => n + p.length, 0),
    quantilesS: quantiles.s,
    documentsS: await pagesSpan('agent-documents-batch', documentsSince),
  };
}

let sample: Sample | undefined;
try {
  const agents = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM agents')).rows[0]!.n;
  if (samplePages !== undefined) {
    const ids = (await db.query<{ id: string }>('SELECT id FROM agents ORDER BY id')).rows.map((r) => r.id);
    const all = pagesOf(ids, AGENT_BATCH_SIZE);
    const step = Math.max(1, Math.floor(all.length / samplePages));
    const offset = Number(values['sample-offset']);
    if (!(Number.isInteger(offset) && offset >= 0 && offset < step))
      throw new Error(`--sample-offset takes a whole number of pages from 0 to ${step - 1}`);
    const pages = all.filter((_, i) => i % step === offset).slice(0, samplePages);
    sample = {
      pages,
      agents: pages.reduce((n, p) => n + p.length, 0),
      database: await openDatabase({
        url,
        poolMax: 4,
        embeddedDataDir: 'memory://',
        log: createLogger('warn', { bench: 'recompute' }),
      }),
    };
    console.log(
      `sample: ${pages.length} pages of ${all.length} (every ${step}th from page ${offset}), ${sample.agents} agents`,
    );
  }
  // Let the start-up jobs (population quantiles over the generated data) and the catalogue's
  // first-time work (the skills index and its shards, the Bazaar's listings, on a marketplace never
  // published) finish first, so the passes measure the agents' documents alone.
  const drained = async () =>
    Object.values(await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).every((n) => n === 0);
  const caughtUp = performance.now();
  if (values['hold-catch-up']) {
    // The projections (feeds, the Bazaar's listings, the skill documents and the skills index they
    // queue) held for the whole run: each pass of theirs takes its advisory lock or skips, and this
    // session holds them all. Only the start-up jobs run before the first pass.
    await holdProjections(db);
    await eventually(drained, 3_600_000, 500);
    console.log(
      `start-up jobs done in ${((performance.now() - caughtUp) / 1000).toFixed(1)} s; the projections held (the skills index and the listings not caught up)`,
    );
  } else {
    // An hour: at 300k agents the start-up jobs alone (population quantiles, search tier) run for minutes.
    await eventually(drained, 3_600_000, 500);
    await queue.add('skills-index', {}, { jobId: `bench-skills-index-${Date.now()}` });
    await eventually(drained, 3_600_000, 500);
    await listingsSettled(db);
    console.log(
      `start-up jobs, skills index and listings caught up in ${((performance.now() - caughtUp) / 1000).toFixed(1)} s`,
    );
  }
  console.log(`${agents} agents; worker concurrency ${values.concurrency}`);
  for (let pass = 1; pass <= Number(values.passes); pass++) {
    // Before each pass, as autovacuum would have after the writes before it.
    console.log(`vacuum and analyze before pass ${pass}: ${(await vacuumAnalyze(db)).toFixed(1)} s`);
    const before = await stats();
    const started = performance.now();
    const startedAt = Date.now();
    let last = 0;
    /** Each similar page of this pass finished so far, with its time. */
    const similarPagesMs = new Map<string, number>();
    /** Each similar page's agents ranked, and left alone (their lists ranked from the same snapshot before). */
    const similarPagesAgents = new Map<string, { ranked: number; kept: number }>();
    /** The pages of this pass finished so far, with where each spent its time. */
    const donePages = async () => {
      const pages: Array<{
        id: string;
        ms: number;
        attempts: number;
        stalls: number;
        leftAlone: number;
        timings: Record<string, number>;
      }> = [];
      for (const job of await queue.getJobs(['completed'])) {
        if ((job?.processedOn ?? 0) < startedAt) continue;
        // The similar pages run first; their time counts as the page's `similarPages` stage.
        if (job?.name === 'agent-similar-batch') {
          const value = job.returnvalue as { ms?: number; ranked?: number; kept?: number };
          similarPagesMs.set(job.id!, value.ms ?? 0);
          similarPagesAgents.set(job.id!, { ranked: value.ranked ?? 0, kept: value.kept ?? 0 });
          continue;
        }
        if (job?.name !== 'agent-documents-batch') continue;
        pages.push({
          id: job.id!,
          ms: (job.finishedOn ?? 0) - (job.processedOn ?? 0),
          attempts: job.attemptsMade,
          stalls: job.stalledCounter ?? 0,
          leftAlone: (job.returnvalue as { leftAlone?: number }).leftAlone ?? 0,
          timings: (job.returnvalue as { timings?: Record<string, number> }).timings ?? {},
        });
      }
      return pages;
    };
    /** Each stage's time summed over `pages` (so above wall time when pages overlap), in ms. */
    const byStage = (pages: Array<{ timings: Record<string, number> }>) => {
      const spent: Record<string, number> = {};
      if (similarPagesMs.size) spent.similarPagesMs = [...similarPagesMs.values()].reduce((a, b) => a + b, 0);
      for (const p of pages) for (const [k, v] of Object.entries(p.timings)) spent[k] = (spent[k] ?? 0) + v;
      return spent;
    };
    /** Waits for the documents queue to drain, printing the pass's progress every 10 s. */
    const untilDrained = () =>
      eventually(
        async () => {
          const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed');
          if (Date.now() - last > 10_000) {
            last = Date.now();
            // Each stage's mean time a page so far: a run stopped early still says where a page's time goes.
            const done = await donePages();
            // The similar pages' stage over those pages; the others over the document pages done.
            const perPage = Object.entries(byStage(done))
              .map(([k, v]) => [k, v / (k === 'similarPagesMs' ? similarPagesMs.size : done.length)] as const)
              .filter(([, v]) => Number.isFinite(v))
              .map(([k, v]) => `${k.replace(/Ms$/, '')} ${(v / 1000).toFixed(1)}`)
              .join(', ');
            process.stdout.write(
              `  pass ${pass}: ${Math.round((performance.now() - started) / 1000)} s, waiting ${(c.waiting ?? 0) + (c.prioritized ?? 0)}, active ${c.active}, failed ${c.failed}, pages done ${done.length}${perPage ? ` (s a page: ${perPage})` : ''}\n`,
            );
          }
          return (
            (c.waiting ?? 0) + (c.prioritized ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) === 0 &&
            performance.now() - started > 1000
          );
        },
        Number(values['pass-timeout-minutes']) * 60_000,
        250,
      );
    const head =
      sample === undefined
        ? await queue.add(
            'recompute-all',
            { run: `bench${pass}-${Date.now()}` },
            { jobId: `bench-recompute-${pass}-${Date.now()}` },
          )
        : undefined;
    const sampled = sample === undefined ? undefined : await samplePass(sample, pass, untilDrained);
    if (head) await untilDrained();
    const seconds = (performance.now() - started) / 1000;
    const after = await stats();
    // Where the batch jobs spent their time (summed over jobs, so above wall time when they overlap).
    const pages = await donePages();
    const spent = byStage(pages);
    const written = after.writes - before.writes;
    const rebuild = head ? await queue.getJob(head.id!) : undefined;
    const byDocument = (
      await db.query<{ doc: string; n: number }>(
        `SELECT regexp_replace(key, '^api/agents/[^/]+/', '') AS doc, count(*)::int AS n FROM published_documents
       WHERE key LIKE 'api/agents/%' AND published_at >= to_timestamp($1 / 1000.0) GROUP BY 1 ORDER BY 2 DESC`,
        [startedAt],
      )
    ).rows;
    const recomputed = sample ? sample.agents : agents;
    console.log(
      `pass ${pass}: ${seconds.toFixed(1)} s (${(recomputed / seconds).toFixed(0)} agents/s${sample ? ` of a sample of ${recomputed}` : ''}); documents written ${written}, ` +
        `skipped unchanged ${after.docs - written}; documents in bucket ${after.docs}; service peak RSS ${peakMb().toFixed(0)} MiB`,
    );
    if (sampled) {
      const similarMs = sampled.similarAgents ? (sampled.similarS * 1000) / sampled.similarAgents : 0;
      const documentsMs = (sampled.documentsS * 1000) / recomputed;
      const perAgentMs = similarMs + documentsMs;
      const whole = sampled.featuresS + sampled.snapshotS + sampled.quantilesS;
      const projected = whole + (perAgentMs * agents) / 1000;
      console.log(
        `  sample: features ${sampled.rebuilt ? 'rebuilt' : 'left as they were'} in ${sampled.featuresS.toFixed(1)} s, ` +
          `first similar page (the signature snapshot) ${sampled.snapshotS.toFixed(1)} s, other similar pages ${sampled.similarS.toFixed(1)} s (${similarMs.toFixed(2)} ms an agent), ` +
          `quantiles ${sampled.quantilesS.toFixed(1)} s, document pages ${sampled.documentsS.toFixed(1)} s (${documentsMs.toFixed(2)} ms an agent); ` +
          `whole-catalogue stages ${whole.toFixed(1)} s, pages ${perAgentMs.toFixed(2)} ms an agent; a full pass of ${agents} agents projected at ${projected.toFixed(0)} s`,
      );
    }
    const similarAgents = [...similarPagesAgents.values()];
    const sumOf = (k: 'ranked' | 'kept') => similarAgents.reduce((n, a) => n + a[k], 0);
    console.log(
      `  similar lists: ${sumOf('ranked')} agents ranked, ${sumOf('kept')} left alone (ranked from the same snapshot before); ` +
        `documents: ${pages.reduce((n, p) => n + p.leftAlone, 0)} agents left alone (inputs and published documents as recorded)`,
    );
    const features = rebuild
      ? `features ${rebuild.returnvalue?.featuresRebuilt === false ? 'left as they were (their sources unchanged)' : 'rebuilt'} and pages queued in ${(((rebuild.finishedOn ?? 0) - (rebuild.processedOn ?? 0)) / 1000).toFixed(1)} s; `
      : '';
    console.log(`  ${features}written by document: ${byDocument.map((d) => `${d.doc} ${d.n}`).join(', ') || 'none'}`);
    console.log(
      `  job time by stage (s, summed over concurrent jobs): ${Object.entries(spent)
        .map(([k, v]) => `${k.replace(/Ms$/, '')} ${(v / 1000).toFixed(1)}`)
        .join(', ')}`,
    );
    // The pass's stages in wall time, from the jobs' own start and end: the feature rebuild (and
    // queueing), the similar pages, the documents stage (waiting for the pages, then the
    // quantiles), the document pages, each from its first job's start to its last job's end.
    const ofPass = (await queue.getJobs(['completed'])).filter((j) => (j?.processedOn ?? 0) >= startedAt);
    const span = (name: string) => {
      const jobs = ofPass.filter((j) => j.name === name);
      if (!jobs.length) return 'none';
      const from = Math.min(...jobs.map((j) => j.processedOn ?? 0));
      const to = Math.max(...jobs.map((j) => j.finishedOn ?? 0));
      return `${((from - startedAt) / 1000).toFixed(1)}-${((to - startedAt) / 1000).toFixed(1)} s`;
    };
    console.log(
      `  stages (s from the start of the pass): rebuild ${span('recompute-all')}, similar pages ${span('agent-similar-batch')}, ` +
        `quantiles ${span('recompute-all-documents')}, document pages ${span('agent-documents-batch')}`,
    );
    // The slowest pages, with what each spent where: a page far slower than the rest holds up the end of the pass.
    const slowest = pages.sort((a, b) => b.ms - a.ms).slice(0, 3);
    console.log(
      `  slowest pages of ${pages.length}: ${slowest
        .map(
          (p) =>
            `${(p.ms / 1000).toFixed(1)} s (attempts ${p.attempts}, stalled ${p.stalls}; ${Object.entries(p.timings)
              .map(([k, v]) => `${k.replace(/Ms$/, '')} ${v}`)
              .join(' ')})`,
        )
        .join('; ')}`,
    );
  }
} finally {
  await sample?.database.close();
  await service.stop();
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  redis.disconnect();
  await db.end();
  await bucket.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
