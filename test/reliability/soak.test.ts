import { expect } from 'chai';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer, type Buyer } from '../support/buyers.js';
import { eventually } from '../support/service.js';
import {
  CHILD_ADMIN_TOKEN,
  spawnServiceChild,
  startServiceParts,
  type ServiceChild,
  type ServiceParts,
} from '../support/service-child.js';
import { AGENT_DOCUMENT_NAMES } from '../../src/domain/agents/agent-documents.js';
import { skillBody, skillName } from '../support/skills.js';

const MiB = 1024 * 1024;
/** Length of the load. Its first third is warm-up (JIT, pools, caches filling); the last two are compared. */
const LOAD_MS = 36_000;
/** Client loops sending one request at a time: steady load that a 2-core machine serves without queueing for long. */
const CLIENTS = 6;
/** One purchase (a real x402 payment, settled on chain) every this many ms. */
const PURCHASE_EVERY_MS = 1_500;

interface Sample {
  at: number;
  rss: number;
  heapUsed: number | undefined;
}

type Kind = 'discovery' | 'feed' | 'search' | 'document' | 'invalid' | 'purchase';

/** A deterministic generator, so a failing run can be replayed with the same request mix. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * The service under a bounded mixed load for half a minute, in its own process so its memory is
 * its own: discovery reads, feed walks, searches (repeated ones answered from its caches, new ones
 * by PostgreSQL), document reads, purchases paid on chain and malformed requests. Its memory must
 * level off rather than grow with the number of requests, nothing may fail with a 5xx, and it must
 * still be ready afterwards.
 */
describe('soak: half a minute of mixed traffic', function () {
  this.timeout(240_000);
  let parts: ServiceParts | undefined;
  let svc: ServiceChild | undefined;
  const sellers: Agent[] = [];
  const posts: { id: string; price: bigint }[] = [];
  const buyers: Buyer[] = [];

  before(async () => {
    parts = await startServiceParts();
    svc = await spawnServiceChild(
      // One address stands in for many clients here, so the per-client search limit must not turn
      // the searches (the load's costliest part) into cheap refusals.
      { ...parts.env, RATE_LIMITS: 'search=1000000,paid=1000000' },
      { logLevel: 'warn', heapProbe: true },
    );
    const target = { url: svc.url, chain: parts.chain };
    const topics = [
      ['data', 'cleaning', 'data_engineering/data_cleaning'],
      ['translation', 'language', 'natural_language_processing/language_translation'],
      ['image', 'vision', 'images_computer_vision/image_classification'],
      ['finance', 'ledger', 'data_engineering/data_transformation_pipeline'],
    ];
    sellers.push(...(await Promise.all(topics.map((_, i) => registerAgent(target, `soak-seller-${i}`, 5_000_000n)))));
    for (const [i, seller] of sellers.entries()) {
      const [word, other, skill] = topics[i]!;
      const profile = await seller.api('/api/agents/me', {
        method: 'PATCH',
        json: { bio: `Agent ${i} sells careful ${word} and ${other} skills.`, oasfSkills: [skill] },
      });
      expect(profile.status, await profile.clone().text()).to.equal(200);
      for (let k = 0; k < 3; k++) {
        const price = k === 0 ? 0n : 100_000n * BigInt(i + k);
        const res = await seller.api('/api/posts', {
          method: 'POST',
          json: {
            title: `${word} skill ${k} by ${seller.handle}`,
            preview: `Careful ${other} work, step ${k}`,
            priceAtomic: String(price),
            tags: [word!, other!, 'soak'],
            body: skillBody(skillName(`${word} skill ${k} by ${seller.handle}`), `# ${word} ${k}`),
          },
        });
        expect(res.status, await res.clone().text()).to.equal(201);
        const post = await res.json();
        expect((await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' })).status).to.equal(200);
        posts.push({ id: post.id, price });
      }
    }
    for (let i = 0; i < 6; i++) buyers.push(await newBuyer(parts.chain, 5_000_000n));
    // A new agent's documents are answered 404 document_not_ready until the worker first publishes them.
    await eventually(
      async () => {
        const res = await Promise.all(
          sellers.flatMap((s) => AGENT_DOCUMENT_NAMES.map((n) => fetch(`${svc!.url}/api/agents/${s.handle}/${n}`))),
        );
        await Promise.all(res.map((r) => r.arrayBuffer()));
        return res.every((r) => r.status === 200);
      },
      60_000,
      250,
    );
  });

  after(async () => {
    await svc?.stop().catch(() => undefined);
    await parts?.stop();
  });

  it('memory levels off, no request fails with a 5xx, and the service is ready afterwards', async () => {
    const url = svc!.url;
    const random = prng(7919);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    const counts: Record<Kind, number> = { discovery: 0, feed: 0, search: 0, document: 0, invalid: 0, purchase: 0 };
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    const unexpected: string[] = [];
    let serial = 0;
    let started = 0;
    /** Requests sent in each third of the run. */
    const perThird = [0, 0, 0];

    /** One request; `ok` says which statuses this kind of request may get. */
    const send = async (
      kind: Kind,
      path: string,
      ok: (status: number) => boolean,
      init?: RequestInit,
      doFetch: typeof fetch = fetch,
    ) => {
      counts[kind]++;
      perThird[Math.min(2, Math.floor(((Date.now() - started) / LOAD_MS) * 3))]!++;
      let status: number;
      let body: unknown;
      try {
        const res = await doFetch(`${url}${path}`, init);
        status = res.status;
        const text = await res.text();
        body = res.headers.get('content-type')?.includes('json') && text ? JSON.parse(text) : text;
      } catch (err) {
        failures.push(`${kind} ${path}: ${(err as Error).message}`);
        return undefined;
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status >= 500)
        failures.push(`${kind} ${init?.method ?? 'GET'} ${path}: ${status} ${JSON.stringify(body).slice(0, 200)}`);
      else if (!ok(status))
        unexpected.push(`${kind} ${init?.method ?? 'GET'} ${path}: ${status} ${JSON.stringify(body).slice(0, 160)}`);
      return body;
    };
    const read = (s: number) => s === 200 || s === 304;
    const refused = (s: number) => s >= 400 && s < 500;
    const words = [
      'careful',
      'data',
      'cleaning',
      'translation',
      'image',
      'vision',
      'finance',
      'ledger',
      'skill',
      'soak',
      'langauge',
      'clening',
    ];

    const oneRequest = async () => {
      const r = random();
      const seller = pick(sellers);
      const post = pick(posts);
      if (r < 0.2) {
        await send(
          'discovery',
          pick([
            '/api/discovery/trending.json',
            '/api/discovery/tags',
            '/api/discovery/categories.json',
            '/api/discovery/categories.json?depth=4',
            '/api/discovery/categories.json?kind=skills&depth=3',
            '/api/discovery/agents.json?sort=top',
            '/.well-known/agent-card.json',
          ]),
          read,
        );
      } else if (r < 0.3) {
        // A crawler's walk of a feed, a page at a time, then one delta poll.
        const feed = pick(['agents', 'posts']);
        let page = (await send('feed', `/api/discovery/${feed}.json?limit=2`, read)) as
          | { nextCursor?: string | null; nextSince?: string; hasMore?: boolean }
          | undefined;
        for (let n = 0; page?.nextCursor && n < 20; n++) {
          page = (await send(
            'feed',
            `/api/discovery/${feed}.json?limit=2&cursor=${encodeURIComponent(page.nextCursor)}`,
            read,
          )) as typeof page;
        }
        if (page?.nextSince)
          await send('feed', `/api/discovery/${feed}.json?since=${encodeURIComponent(page.nextSince)}`, read);
      } else if (r < 0.6) {
        // Half repeat popular queries (the answer cache), half are new (vocabulary, typo correction, PostgreSQL).
        const q = random() < 0.5 ? `${pick(words)} ${pick(words)}` : `${pick(words)} q${serial++}x`;
        await send(
          'search',
          `/api/discovery/search?q=${encodeURIComponent(q)}&type=${pick(['all', 'posts', 'agents', 'tags'])}`,
          read,
        );
      } else if (r < 0.85) {
        await send(
          'document',
          pick([
            `/api/agents/${seller.handle}/${pick(AGENT_DOCUMENT_NAMES)}`,
            `/api/agents/${seller.handle}/badge.svg?style=for-the-badge&kind=${pick(['earnings', 'buyers', 'skills', 'verified'])}`,
            `/api/posts/${post.id}`,
            `/api/posts/${post.id}/manifest.json`,
            `/api/posts/${posts.find((p) => p.price === 0n)!.id}?view=full`,
          ]),
          read,
        );
      } else {
        const paid = posts.find((p) => p.price > 0n)!;
        const [path, init] = pick<[string, RequestInit?]>([
          ['/api/discovery/search?q=x'],
          ['/api/discovery/agents.json?limit=100000'],
          ['/api/discovery/posts.json?cursor=yesterday'],
          ['/api/posts/not-a-uuid'],
          ['/api/posts/00000000-0000-4000-8000-000000000000'],
          [`/api/agents/nobody-${serial++}/score.json`],
          ['/api/nothing/here'],
          ['/api/posts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":' }],
          [
            '/api/posts',
            {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ title: 'no token' }),
            },
          ],
          [`/api/posts/${paid.id}?view=full`],
          [
            `/api/posts/${paid.id}?view=full`,
            { headers: { 'payment-signature': Buffer.from('{"x402Version":2}').toString('base64') } },
          ],
          [`/api/posts/${paid.id}?view=full`, { headers: { 'x-payment': 'not base64 at all %%%' } }],
          ['/api/payments/not-a-payment'],
          ['/metrics'],
        ]);
        await send('invalid', path, refused, init);
      }
    };

    // What the memory does, sampled every second from outside the process.
    const samples: Sample[] = [];
    const heapUsed = async () => {
      const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${CHILD_ADMIN_TOKEN}` } });
      const m = /^nodejs_heap_size_used_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)$/m.exec(await res.text());
      return m ? Number(m[1]) : undefined;
    };
    started = Date.now();
    const deadline = started + LOAD_MS;
    const sampler = (async () => {
      while (Date.now() < deadline) {
        samples.push({ at: Date.now() - started, rss: svc!.rss(), heapUsed: await heapUsed().catch(() => undefined) });
        await new Promise((r) => setTimeout(r, 1_000));
      }
    })();
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < deadline) await oneRequest();
    });
    let purchases = 0;
    const purchaser = (async () => {
      const paid = posts.filter((p) => p.price > 0n);
      for (let i = 0; Date.now() < deadline; i++) {
        const next = Date.now() + PURCHASE_EVERY_MS;
        const buyer = buyers[i % buyers.length]!;
        const post = paid[Math.floor(i / buyers.length) % paid.length]!;
        await send('purchase', `/api/posts/${post.id}?view=full`, (s) => s === 200, undefined, buyer.payV2);
        purchases++;
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      }
    })();
    // What the process keeps (its heap after a full collection) at the end of each third.
    const kept: number[] = [];
    const prober = (async () => {
      for (const at of [LOAD_MS / 3, (2 * LOAD_MS) / 3]) {
        await new Promise((r) => setTimeout(r, Math.max(0, started + at - Date.now())));
        kept.push(await svc!.liveHeap());
      }
    })();
    await Promise.all([sampler, purchaser, prober, ...clients]);
    const elapsed = (Date.now() - started) / 1000;
    kept.push(await svc!.liveHeap());

    const ready = await fetch(`${url}/readyz`);
    const total = [...statuses.values()].reduce((a, b) => a + b, 0);
    const fivexx = [...statuses].filter(([s]) => s >= 500).reduce((a, [, n]) => a + n, 0);
    const third = (i: number) => samples.filter((s) => s.at >= (LOAD_MS / 3) * i && s.at < (LOAD_MS / 3) * (i + 1));
    const max = (xs: number[]) => Math.max(...xs);
    const min = (xs: number[]) => Math.min(...xs);
    const rssOf = (xs: Sample[]) => xs.map((s) => s.rss);
    const heapOf = (xs: Sample[]) => xs.map((s) => s.heapUsed).filter((h): h is number => h !== undefined);
    const [, second, last] = [third(0), third(1), third(2)];
    const mib = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
    console.log(
      `      ${total} requests in ${elapsed.toFixed(1)} s (${(total / elapsed).toFixed(0)}/s): ${JSON.stringify(counts)}; ` +
        `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}; 5xx: ${fivexx}; purchases ${purchases}`,
    );
    console.log(
      `      RSS start ${mib(samples[0]!.rss)}, peak ${mib(max(rssOf(samples)))}, end ${mib(samples.at(-1)!.rss)}; ` +
        `second third peak ${mib(max(rssOf(second)))}, last third peak ${mib(max(rssOf(last)))}; ` +
        `heap used min/max ${mib(min(heapOf(samples)))}/${mib(max(heapOf(samples)))}, lowest in the second third ${mib(min(heapOf(second)))}, in the last ${mib(min(heapOf(last)))}`,
    );
    console.log(
      `      requests per third: ${perThird.join(', ')}; heap kept after a full collection, at the end of each third: ${kept.map(mib).join(', ')}`,
    );
    console.log(`      RSS each second (MiB): ${samples.map((s) => Math.round(s.rss / MiB)).join(' ')}`);
    console.log(
      `      heap used each second (MiB): ${samples.map((s) => (s.heapUsed === undefined ? '?' : Math.round(s.heapUsed / MiB))).join(' ')}`,
    );

    expect(failures, 'requests that failed with a 5xx or no answer').to.deep.equal([]);
    // Summed by request and status, so a failure names each kind of surprise once.
    const bySurprise = new Map<string, number>();
    for (const u of unexpected)
      bySurprise.set(
        u.replace(/q\d+x|nobody-\d+/g, '…'),
        (bySurprise.get(u.replace(/q\d+x|nobody-\d+/g, '…')) ?? 0) + 1,
      );
    const surprises = [...bySurprise].map(([u, n]) => `${u} (x${n})`);
    expect(surprises, 'requests answered otherwise than expected').to.deep.equal([]);
    expect(ready.status, 'readyz after the soak').to.equal(200);
    expect(purchases, 'purchases made').to.be.greaterThan(10);
    expect(second.length).to.be.greaterThan(5);
    expect(last.length).to.be.greaterThan(5);

    // What the process keeps must not grow with the requests it served. Between collections the
    // heap holds garbage (the samples printed climb by over 100 MiB between major collections), so
    // only the heap after a full collection says what is kept. Its caches are bounded by size and
    // by time (search answers 30 s, vocabulary 60 s, rendered pages 30 s) and warm after the first
    // third, so what they add later is a few MiB. 16 MiB over the last two thirds is 1-2 KiB for
    // each request sent in them even on a machine half as fast as the printed rate, so keeping a
    // fraction of each request's work fails here.
    expect(kept[2]! - kept[0]!, 'heap kept after the last third minus after the first').to.be.at.most(16 * MiB);
    // RSS grows in steps (heap pages, the young generation growing to its 2 x 32 MiB semi-spaces,
    // compiled code) and V8 gives pages back only after a full collection (each third above starts
    // after one). So compare the thirds' peaks with a margin that absorbs a step or two: 64 MiB or
    // 25%, whichever is larger. Memory that is never given back (outside the JS heap too: buffers,
    // sockets, native allocations) makes each third's peak higher than the last, by more than that.
    const secondPeak = max(rssOf(second));
    expect(max(rssOf(last)), 'RSS peak of the last third').to.be.at.most(
      secondPeak + Math.max(64 * MiB, secondPeak / 4),
    );
  });
});
