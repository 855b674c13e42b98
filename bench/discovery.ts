/**
 * Discovery reads on the generated marketplace: search latency and throughput with 16 concurrent
 * clients, and 200-item agent-feed pages against a bare Express route returning the same bytes
 * (measured in the same run, so the ratio is what the service adds). The service runs as deployed:
 * one API process alone, a worker and a scheduler in their own processes, each with its production
 * heap cap, so the reads measured do not share an event loop with background jobs.
 *
 *   npx tsx bench/generate.ts                         # prints DATABASE_URL=…
 *   npx tsx bench/discovery.ts --database-url postgres://… [--clients 16] [--seconds 15]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { freePort } from '../src/platform/net.js';
import { eventually } from '../test/support/service.js';
import { startTopology } from '../test/support/topology.js';
import {
  BATCH_JOBS_HELD,
  GENERATED_PUBLIC_BASE_URL,
  keptDatabase,
  peakRssMiB,
} from './support/generated-marketplace.js';
import { printRunInfo } from './support/run-info.js';
import { pct } from './support/stats.js';

printRunInfo();

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    clients: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '15' },
  },
});
const url = values['database-url'];
if (!url) throw new Error('--database-url is required (run bench/generate.ts first)');
const CLIENTS = Number(values.clients);
const SECONDS = Number(values.seconds);

async function load(name: string, next: (i: number) => string) {
  const latencies: number[] = [];
  let errors = 0;
  const deadline = Date.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = c; Date.now() < deadline; i += CLIENTS) {
        const t0 = performance.now();
        const res = await fetch(next(i));
        await res.arrayBuffer();
        if (res.status !== 200 && errors++ < 3)
          console.log(`  ${res.status} for ${decodeURIComponent(next(i).replace(/^.*?\?/, ''))}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const rps = latencies.length / seconds;
  console.log(
    `${name.padEnd(34)} ${rps.toFixed(0).padStart(6)} req/s  p50 ${pct(latencies, 50).toFixed(1)} ms  p99 ${pct(latencies, 99).toFixed(1)} ms  errors ${errors}`,
  );
  return { rps, p99: pct(latencies, 99) };
}

const dataDir = mkdtempSync(join(tmpdir(), 'market-discovery-'));
const topology = await startTopology({
  // The generated database is the caller's: kept when the bench stops.
  database: keptDatabase(url),
  apis: 1,
  workers: 1,
  schedulers: 1,
  productionHeap: true,
  discardLogs: true,
  // The periodic batch jobs (population statistics every 15 minutes, the daily recompute) are kept
  // out of the measured minutes: on this machine they share PostgreSQL and the two cores with the
  // API, which a deployment gives a database and workers of their own.
  env: { DATABASE_POOL_MAX: '20', ...BATCH_JOBS_HELD, ...GENERATED_PUBLIC_BASE_URL },
});
const api = topology.apis[0]!;
const db = new pg.Client({ connectionString: url });
await db.connect();
const base = api.url!;
try {
  const agents = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM agents')).rows[0]!.n;
  console.log(`waiting for the feed indexer and the rankings over ${agents} agents…`);
  await eventually(
    async () =>
      (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM feed_entries WHERE kind = 'agent'")).rows[0]!.n >=
      agents,
    900_000,
    2000,
  );
  await eventually(async () => (await db.query('SELECT 1 FROM tag_stats LIMIT 1')).rowCount === 1, 900_000, 2000);
  // And for the start-up jobs (population quantiles, rankings and the search vocabulary over the
  // whole marketplace, a minute or more): on a database used before, tag_stats already exists and
  // the measurements would otherwise share the machine with them.
  await eventually(async () => (await topology.pendingJobs()) === 0, 900_000, 1000);
  // A server that has been serving keeps the tables its reads use in memory; a database just
  // generated is mostly on disk, and a new query's skill matches are then random disk reads (at
  // 1M skills they doubled a search's time). The tables the measured reads use, and their indexes,
  // are read into the operating system's page cache first (pg_prewarm's 'read' mode; PostgreSQL's
  // own buffers keep their configured size), so the figures are of a warm server.
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_prewarm');
  const warmed = await db.query<{ blocks: string }>(
    `SELECT sum(pg_prewarm(c.oid::regclass, 'read'))::text AS blocks
     FROM pg_class c LEFT JOIN pg_index i ON i.indexrelid = c.oid
     WHERE c.relkind IN ('r', 'i') AND coalesce(i.indrelid, c.oid) = ANY($1::regclass[])`,
    [
      [
        'posts',
        'agents',
        'agent_metrics',
        'feed_entries',
        'search_tier_posts',
        'search_vocabulary',
        'tag_stats',
        'bazaar_listings',
        'post_versions',
      ],
    ],
  );
  console.log(
    `read ${(Number(warmed.rows[0]!.blocks) * 8) >> 10} MiB of the read path's tables and indexes into the page cache`,
  );

  // Cursors spread over the whole feed, each with a full page after it (the sample page below is
  // the first: one from the newest 200 entries made a 2 kB page the baseline), and queries mixing
  // words, tags, handles and typos.
  const cursors = (
    await db.query<{ c: string }>(`
    SELECT to_char(feed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS c FROM feed_entries
    WHERE kind = 'agent' AND feed_at < (SELECT feed_at FROM feed_entries WHERE kind = 'agent' ORDER BY feed_at DESC OFFSET 200 LIMIT 1)
    ORDER BY random() LIMIT 500`)
  ).rows.map((r) => r.c);
  const queries = [
    'pdf tables',
    'invoices',
    'tag-12',
    'agent-4242',
    'sql',
    'scrapng',
    'translation skill',
    'email',
    'charts',
    'ocr invoices',
    'agnet-77',
    'skill 1234',
  ];
  const sample = await (
    await fetch(`${base}/api/discovery/agents.json?limit=200&cursor=${encodeURIComponent(cursors[0]!)}`)
  ).arrayBuffer();

  // The baseline: a bare Express route sending the same 200-item page, in its own process (like the
  // service), so it does not share the load generator's event loop.
  const samplePath = join(dataDir, 'page.json');
  writeFileSync(samplePath, Buffer.from(sample));
  const barePort = await freePort();
  const bareChild = spawn(
    process.execPath,
    [
      '-e',
      `
    const body = require('fs').readFileSync(${JSON.stringify(samplePath)});
    const app = require('express')();
    app.get('/page', (_q, r) => r.type('application/json').send(body));
    app.listen(${barePort}, '127.0.0.1');`,
    ],
    { cwd: join(import.meta.dirname, '..'), stdio: 'inherit' },
  );
  await eventually(async () => (await fetch(`http://127.0.0.1:${barePort}/page`)).status === 200, 10_000, 100);

  console.log(`\n== discovery reads, ${CLIENTS} concurrent clients, ${SECONDS} s each ==`);
  // Popular queries repeat (the API keeps an answer for its 30 s max-age, as a CDN would); the
  // second run never repeats a query, so each one is computed: the miss path.
  await load(
    'search (all types, limit 20)',
    (i) => `${base}/api/discovery/search?q=${encodeURIComponent(queries[i % queries.length]!)}`,
  );
  // Every request its own query, so none is answered from a cache: one or two of the 500 most
  // used words, a typo of one, or a handle (some mistyped), 40,000 distinct strings.
  const common = (
    await db.query<{ word: string }>(
      `SELECT word FROM search_vocabulary WHERE word <> '' ORDER BY posts + agents DESC LIMIT 500`,
    )
  ).rows.map((r) => r.word);
  const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
  const typo = (w: string) => {
    const i = 1 + Math.floor(Math.random() * Math.max(1, w.length - 2));
    return Math.random() < 0.5 ? w.slice(0, i) + w.slice(i + 1) : w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2);
  };
  const distinct = new Set<string>();
  while (distinct.size < 40_000) {
    const r = Math.random();
    distinct.add(
      r < 0.35
        ? `${pick(common)} ${pick(common)}`
        : r < 0.6
          ? `${pick(common)} ${Math.floor(Math.random() * 10_000)}`
          : r < 0.8
            ? typo(pick(common.filter((w) => w.length >= 4)))
            : `agent-${1 + Math.floor(Math.random() * agents)}${Math.random() < 0.3 ? 'x' : ''}`,
    );
  }
  const fresh = [...distinct];
  const newQuery = await load(
    'search, every request a new query',
    (i) => `${base}/api/discovery/search?q=${encodeURIComponent(fresh[i % fresh.length]!)}`,
  );
  // Cold: every one of the 500 pages is rendered on first request. Warm: the same pages again, as
  // crawlers walking the same feed (or a CDN's misses) see them.
  await load(
    'agent feed page (200 items), cold',
    (i) => `${base}/api/discovery/agents.json?limit=200&cursor=${encodeURIComponent(cursors[i % cursors.length]!)}`,
  );
  const feed = await load(
    'agent feed page (200 items), warm',
    (i) => `${base}/api/discovery/agents.json?limit=200&cursor=${encodeURIComponent(cursors[i % cursors.length]!)}`,
  );
  const bare = await load('bare Express, same bytes', () => `http://127.0.0.1:${barePort}/page`);
  console.log(
    `feed throughput / bare Express: ${(feed.rps / bare.rps).toFixed(2)} (page ${sample.byteLength} bytes; target ≥ 0.5)`,
  );
  console.log(`feed warm p99 / bare Express p99: ${(feed.p99 / bare.p99).toFixed(2)} (target ≤ 3)`);
  console.log(`new-query search p99 / bare Express p99: ${(newQuery.p99 / bare.p99).toFixed(2)} (target ≤ 2.5)`);
  bareChild.kill('SIGTERM');
  console.log(
    `peak RSS: api ${peakRssMiB(api.child.pid!).toFixed(0)}, worker ${peakRssMiB(topology.workers[0]!.child.pid!).toFixed(0)}, scheduler ${peakRssMiB(topology.schedulers[0]!.child.pid!).toFixed(0)} MiB`,
  );
} finally {
  await topology.stop();
  await db.end();
  rmSync(dataDir, { recursive: true, force: true });
}
