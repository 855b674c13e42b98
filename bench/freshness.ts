/**
 * Freshness: the delay from a settled purchase (the buyer's 200) to the seller's updated score,
 * health and badge being served at their public paths (through the edge, i.e. from the bucket).
 *
 *   npx tsx bench/freshness.ts [--purchases 40] [--rate 2]
 *
 * The service runs as its own process (role all) on anvil and a fresh PostgreSQL database. Purchases
 * arrive at a steady rate from distinct buyers; after each, the three documents are polled every
 * 20 ms until they reflect it. Prints p50, p95 and max per document.
 *
 * With --database-url (a marketplace from bench/generate.ts) it measures one sale's document work
 * at that catalogue's size: the roles as deployed (API, worker, scheduler, production heap caps,
 * periodic batch jobs held) on that database, and the sales go to its busiest seller (most sales in
 * 90 days: the largest reputation mirror and score inputs), whose documents are rendered once by an
 * unmeasured first sale. Its score and health are measured (the badge states a revenue this bench
 * does not know beforehand). The start-up jobs, a skills-index publish (on a marketplace never
 * published, its first: every shard) and a rebuild of the Bazaar's listings under way run to the
 * end before the first sale, so what is measured is the sales' own work.
 *
 *   npx tsx bench/freshness.ts --database-url postgres://… [--purchases 30] [--rate 2] [--seller-sales N] [--hold-catch-up]
 *
 * With --seller-sales N the sales go to the seller whose sales in 90 days are nearest N instead: the
 * same seller's size on marketplaces of different sizes, so what grows with the catalogue is told
 * apart from what grows with the seller's own sales.
 *
 * With --hold-catch-up the projections (feeds, the Bazaar's listings, the skill documents) are held
 * for the whole run instead (this script takes their advisory locks) and the sales start once the
 * start-up jobs are done: a marketplace never published need not first publish its listings and
 * shards (at 300k agents, hours on these roles). The sales' feed entries and listings then wait;
 * the score and health measured are the agent's own documents, which do not.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startServiceProcess } from './support/service-process.js';
import { startTopology } from '../test/support/topology.js';
import {
  BATCH_JOBS_HELD,
  GENERATED_PUBLIC_BASE_URL,
  holdProjections,
  keptDatabase,
  listingsSettled,
  vacuumAnalyze,
} from './support/generated-marketplace.js';
import type { ChainHandle } from '../src/platform/blockchain.js';
import { registerAgent } from '../test/support/agents.js';
import { newBuyer } from '../test/support/buyers.js';
import { printRunInfo } from './support/run-info.js';
import { skillBody, skillName } from '../test/support/skills.js';
import { pct } from './support/stats.js';
import { eventually } from '../test/support/service.js';

printRunInfo();

const { values } = parseArgs({
  options: {
    purchases: { type: 'string', default: '40' },
    rate: { type: 'string', default: '2' },
    'database-url': { type: 'string' },
    'hold-catch-up': { type: 'boolean', default: false },
    'seller-sales': { type: 'string' },
  },
});
const N = Number(values.purchases);
const sellerSales = values['seller-sales'] === undefined ? undefined : Number(values['seller-sales']);
if (sellerSales !== undefined && !(Number.isInteger(sellerSales) && sellerSales >= 0))
  throw new Error('--seller-sales takes a whole number of sales');
const INTERVAL_MS = 1000 / Number(values.rate);

/** The service, the seller and two of its paid skills: a new seller on a fresh database, or a generated marketplace's busiest (or the one nearest --seller-sales). */
async function setUp(): Promise<{
  url: string;
  chain: ChainHandle;
  handle: string;
  ids: string[];
  fresh: boolean;
  stop(): Promise<void>;
}> {
  const databaseUrl = values['database-url'];
  if (!databaseUrl) {
    const svc = await startServiceProcess();
    const chain = svc.chain;
    const seller = await registerAgent({ url: svc.url, chain }, 'fresh-seller');
    await seller.api('/api/agents/me', {
      method: 'PATCH',
      json: { contactEmail: 'ops@fresh.example', docsUrl: 'https://docs.fresh.example' },
    });
    const ids: string[] = [];
    for (const title of ['Fresh skill A', 'Fresh skill B']) {
      const post = await (
        await seller.api('/api/posts', {
          method: 'POST',
          json: { title, preview: 'p', priceAtomic: '10000', body: skillBody(skillName(title), title) },
        })
      ).json();
      await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
      ids.push(post.id);
    }
    return { url: svc.url, chain, handle: 'fresh-seller', ids, fresh: true, stop: () => svc.stop() };
  }
  // Held from before the roles start, so their start-up passes of the projections skip too.
  const held = values['hold-catch-up'] ? new pg.Client({ connectionString: databaseUrl }) : undefined;
  if (held) {
    await held.connect();
    await holdProjections(held);
  }
  const topology = await startTopology({
    // The generated database is the caller's: kept when the bench stops.
    database: keptDatabase(databaseUrl),
    apis: 1,
    workers: 1,
    schedulers: 1,
    productionHeap: true,
    discardLogs: true,
    env: { ...BATCH_JOBS_HELD, ...GENERATED_PUBLIC_BASE_URL },
  });
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ handle: string; ids: string[] }>(
      `
      SELECT a.handle, (SELECT array_agg(p.id::text ORDER BY p.id) FROM (
               SELECT id FROM posts WHERE author_id = a.id AND status = 'published' AND price_atomic BETWEEN 1 AND 1000000 LIMIT 2) p) AS ids
      FROM (SELECT seller_id, count(*) AS n FROM purchases WHERE created_at > now() - interval '90 days' GROUP BY seller_id) s
      JOIN agents a ON a.id = s.seller_id
      WHERE (SELECT count(*) FROM posts WHERE author_id = a.id AND status = 'published' AND price_atomic BETWEEN 1 AND 1000000) >= 2
      ORDER BY ${sellerSales === undefined ? 's.n DESC' : 'abs(s.n - $1)'} LIMIT 1`,
      sellerSales === undefined ? [] : [sellerSales],
    );
    const seller = rows[0];
    if (!seller) throw new Error('no seller with two published paid skills in this database');
    const started = performance.now();
    // An hour: at 300k agents the start-up jobs alone (population quantiles, search tier) run for minutes.
    await eventually(async () => (await topology.pendingJobs()) === 0, 3_600_000, 1000);
    if (held) {
      console.log(
        `start-up jobs done in ${((performance.now() - started) / 1000).toFixed(1)} s; the projections held (the skills index and the listings not caught up)`,
      );
    } else {
      const published = performance.now();
      await topology.enqueue('skills-index');
      await eventually(async () => (await topology.pendingJobs()) === 0, 3_600_000, 1000);
      await listingsSettled(db);
      console.log(
        `skills index published and listings caught up before the sales in ${((performance.now() - published) / 1000).toFixed(1)} s`,
      );
    }
    console.log(`vacuum and analyze after the catch-up: ${(await vacuumAnalyze(db)).toFixed(1)} s`);
    return {
      url: topology.apis[0]!.url!,
      chain: topology.chain,
      handle: seller.handle,
      ids: seller.ids,
      fresh: false,
      stop: async () => {
        await topology.stop();
        await held?.end();
      },
    };
  } finally {
    await db.end();
  }
}

const svc = await setUp();
try {
  const { chain, handle, ids } = svc;
  const buyers = [];
  for (let i = 0; i < N + 1; i++) buyers.push(await newBuyer(chain, 2_000_000n));
  const scoreOf = async () => {
    const res = await fetch(`${svc.url}/api/agents/${handle}/score.json`);
    return res.status === 200 ? (JSON.parse(await res.text()).inputs.settlementCount90d as number) : undefined;
  };
  // On a generated marketplace, a first sale renders the seller's documents; the measured ones follow it.
  if (!svc.fresh) {
    const res = await buyers[N]!.payV2(`${svc.url}/api/posts/${ids[0]}?view=full`);
    if (res.status !== 200) throw new Error(`the first purchase failed: ${res.status} ${await res.text()}`);
    await eventually(async () => (await scoreOf()) !== undefined, 120_000, 100);
    console.log(`seller @${handle}: ${await scoreOf()} sales in 90 days`);
  }
  console.log(`measuring ${N} purchases at ${values.rate}/s…`);

  const served = async (path: string, ok: (text: string) => boolean) => {
    for (;;) {
      const res = await fetch(`${svc.url}${path}`);
      const text = await res.text();
      if (res.status === 200 && res.headers.get('last-modified') && ok(text)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const delays: Record<'score' | 'health' | 'badge', number[]> = { score: [], health: [], badge: [] };
  for (let i = 0; i < N; i++) {
    const started = Date.now();
    const res = await buyers[i]!.payV2(`${svc.url}/api/posts/${ids[i % 2]}?view=full`);
    if (res.status !== 200) throw new Error(`purchase ${i} failed: ${res.status}`);
    const settledAt = Date.now();
    const count = i + 1;
    const revenue = (count * 10_000) / 1e6;
    await Promise.all([
      // A generated seller's 90-day counts also fall as its oldest sales leave the window, so on a
      // generated marketplace a score counts as updated once it was computed after the sale.
      served(`/api/agents/${handle}/score.json`, (t) =>
        svc.fresh
          ? JSON.parse(t).inputs.settlementCount90d >= count
          : new Date(JSON.parse(t).computedAt).getTime() >= settledAt - 50,
      ).then(() => delays.score.push(Date.now() - settledAt)),
      served(
        `/api/agents/${handle}/health.json`,
        (t) => JSON.parse(t).lastSettleAt !== null && new Date(JSON.parse(t).lastSettleAt).getTime() >= started - 50,
      ).then(() => delays.health.push(Date.now() - settledAt)),
      svc.fresh
        ? served(`/api/agents/${handle}/badge.svg`, (t) =>
            t.includes(`${revenue.toFixed(2).replace(/\.?0+$/, '')} USDC`),
          ).then(() => delays.badge.push(Date.now() - settledAt))
        : undefined,
    ]);
    const wait = INTERVAL_MS - (Date.now() - started);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  console.log('\n== freshness: settled purchase -> document served from the bucket (ms) ==');
  for (const [doc, xs] of Object.entries(delays))
    if (xs.length)
      console.log(`${doc.padEnd(7)} p50 ${pct(xs, 50)}  p95 ${pct(xs, 95)}  max ${Math.max(...xs)}  (n=${xs.length})`);
  console.log("(includes the edge's 1 s in-process cache, which stands in for a CDN's max-age)");
} finally {
  await svc.stop();
}
