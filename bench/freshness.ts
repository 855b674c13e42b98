/**
 * Freshness: the delay from a settled purchase (the buyer's 200) to the seller's updated score,
 * health and badge being served at their public paths (through the edge, i.e. from the bucket).
 *
 *   npx tsx bench/freshness.ts [--purchases 40] [--rate 2]
 *
 * The service runs as its own process (role all) on anvil and a fresh PostgreSQL database. Purchases
 * arrive at a steady rate from distinct buyers; after each, the three documents are polled every
 * 20 ms until they reflect it. Prints p50, p95 and max per document.
 */
import { parseArgs } from 'node:util';
import { startServiceProcess } from './support/service-process.js';
import { registerAgent } from '../test/support/agents.js';
import { newBuyer } from '../test/support/buyers.js';
import { printRunInfo } from './support/run-info.js';
import { skillBody, skillName } from '../test/support/skills.js';
import { pct } from './support/stats.js';

printRunInfo();

const { values } = parseArgs({
  options: { purchases: { type: 'string', default: '40' }, rate: { type: 'string', default: '2' } },
});
const N = Number(values.purchases);
const INTERVAL_MS = 1000 / Number(values.rate);

const svc = await startServiceProcess();
try {
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
  const buyers = [];
  for (let i = 0; i < N; i++) buyers.push(await newBuyer(chain, 1_000_000n));
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
      served('/api/agents/fresh-seller/score.json', (t) => JSON.parse(t).inputs.settlementCount90d >= count).then(() =>
        delays.score.push(Date.now() - settledAt),
      ),
      served(
        '/api/agents/fresh-seller/health.json',
        (t) => JSON.parse(t).lastSettleAt !== null && new Date(JSON.parse(t).lastSettleAt).getTime() >= started - 50,
      ).then(() => delays.health.push(Date.now() - settledAt)),
      served('/api/agents/fresh-seller/badge.svg', (t) =>
        t.includes(`${revenue.toFixed(2).replace(/\.?0+$/, '')} USDC`),
      ).then(() => delays.badge.push(Date.now() - settledAt)),
    ]);
    const wait = INTERVAL_MS - (Date.now() - started);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  console.log('\n== freshness: settled purchase -> document served from the bucket (ms) ==');
  for (const [doc, xs] of Object.entries(delays))
    console.log(`${doc.padEnd(7)} p50 ${pct(xs, 50)}  p95 ${pct(xs, 95)}  max ${Math.max(...xs)}  (n=${xs.length})`);
  console.log("(includes the edge's 1 s in-process cache, which stands in for a CDN's max-age)");
} finally {
  await svc.stop();
}
