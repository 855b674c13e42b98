import { expect } from 'chai';
import { parseAbi } from 'viem';
import { registerAgent, type Agent } from '../support/agents.js';
import { balanceOf } from '../support/buyers.js';
import { eventually } from '../support/service.js';
import { TOPOLOGY_ADMIN_TOKEN, startTopology, type ServiceNode, type Topology } from '../support/topology.js';
import { AGENT_DOCUMENT_NAMES, agentDocumentKey } from '../../src/domain/agents/agent-documents.js';
import { postManifestDocument } from '../../src/documents/posts/post-manifest.document.js';
import { skillBody, skillName } from '../support/skills.js';

const completions = (node: ServiceNode) =>
  node.logs.filter((l) => l.msg === 'job completed').map((l) => `${l.queue}/${l.jobId}`);

const [authorizationUsed, transferEvent] = parseAbi([
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/**
 * The production topology (infra/compose.yaml) on this machine: two API processes, two workers and
 * a scheduler, each its own process, sharing real PostgreSQL, Redis, an S3-compatible bucket and
 * the chain. Traffic alternates between the APIs the way a load balancer would spread it.
 */
describe('multi-process topology: 2 APIs, 2 workers, 1 scheduler share the work', function () {
  this.timeout(240_000);
  let topo: Topology;
  const agents: Agent[] = [];
  const posts: { id: string; seller: Agent; price: bigint }[] = [];
  let paid = 0;

  before(async () => {
    topo = await startTopology({ apis: 2, workers: 2, schedulers: 1, edge: true });
    const [a, b] = topo.apis.map((n) => n.url!);
    for (let i = 0; i < 6; i++)
      agents.push(await registerAgent({ url: i % 2 ? b! : a!, chain: topo.chain }, `topo-${i}`, 30_000_000n));
    // Each agent publishes two skills through the API it did not register on (one JWT key for all).
    for (const [i, agent] of agents.entries()) {
      const other = topo.apis[(i + 1) % 2]!.url!;
      const auth = { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' };
      await fetch(`${other}/api/agents/me`, {
        method: 'PATCH',
        headers: auth,
        body: JSON.stringify({
          bio: `Agent ${i} sells skills that do careful data work.`,
          oasfSkills: ['data_engineering/data_cleaning'],
        }),
      });
      for (let k = 0; k < 2; k++) {
        const price = k === 0 ? 100_000n * BigInt(i + 1) : 0n;
        const res = await fetch(`${other}/api/posts`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({
            title: `Skill ${k} of ${agent.handle}`,
            preview: 'preview',
            priceAtomic: String(price),
            tags: ['topology'],
            body: skillBody(skillName(`Skill ${k} of ${agent.handle}`), `# ${i}/${k}`),
          }),
        });
        expect(res.status, await res.clone().text()).to.equal(201);
        const post = await res.json();
        const pub = await fetch(`${other}/api/posts/${post.id}/publish`, { method: 'POST', headers: auth });
        expect(pub.status).to.equal(200);
        posts.push({ id: post.id, seller: agent, price });
      }
    }
    // Purchases, alternating APIs, several at once.
    const orders = posts
      .filter((p) => p.price > 0n)
      .flatMap((p, j) => [agents[(j + 1) % 6]!, agents[(j + 2) % 6]!].map((buyer) => ({ p, buyer })));
    await Promise.all(
      orders.map(async ({ p, buyer }, j) => {
        const res = await buyer.payV2(`${topo.apis[j % 2]!.url}/api/posts/${p.id}?view=full`);
        expect(res.status, await res.clone().text()).to.equal(200);
        paid++;
      }),
    );
    await eventually(async () => (await topo.pendingJobs()) === 0, 60_000, 200);
  });
  after(() => topo?.stop());

  it('both APIs served traffic and both workers ran jobs', () => {
    for (const api of topo.apis)
      expect(api.logs.filter((l) => typeof l.route === 'string').length, api.name).to.be.greaterThan(10);
    for (const worker of topo.workers) expect(completions(worker).length, worker.name).to.be.greaterThan(3);
  });

  it('each worker and the scheduler serve /metrics on their own port, with what that process did', async () => {
    const scrape = async (url: string, token = TOPOLOGY_ADMIN_TOKEN) => {
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, text: await res.text() };
    };
    const sum = (text: string, line: RegExp) =>
      [...text.matchAll(line)].reduce((total, m) => total + Number(m[1] ?? 0), 0);
    const completedCount = /^job_duration_seconds_count\{[^}]*outcome="completed"[^}]*\} (\d+)$/gm;
    for (const worker of topo.workers) {
      const url = worker.metricsUrl ?? expect.fail(`${worker.name} has no metrics port`);
      expect((await scrape(url, 'not-the-token')).status, 'without the admin token').to.equal(401);
      const logged = completions(worker).length;
      const { status, text } = await scrape(url);
      expect(status).to.equal(200);
      // The jobs this worker ran, counted by this worker: at least every completion it had logged.
      expect(sum(text, completedCount), worker.name).to.be.at.least(logged).and.greaterThan(0);
      expect(text).to.match(/^# TYPE job_failures_total counter$/m);
      expect(text).to.match(/^# TYPE documents_published_total counter$/m);
      expect(text).to.match(/^process_resident_memory_bytes \d+/m);
    }
    const [scheduler] = topo.schedulers;
    const fromScheduler = await scrape(scheduler?.metricsUrl ?? expect.fail('the scheduler has no metrics port'));
    expect(fromScheduler.status).to.equal(200);
    expect(
      sum(fromScheduler.text, /^scheduler_ticks_total\{[^}]*outcome="enqueued"[^}]*\} (\d+)$/gm),
    ).to.be.greaterThan(0);
    // The APIs ran no job: their /metrics has requests and the shared gauges, no job durations.
    const fromApi = await scrape(`${topo.apis[0]?.url}/metrics`);
    expect(sum(fromApi.text, completedCount)).to.equal(0);
    expect(fromApi.text).to.match(/^http_request_duration_seconds_count\{/m);
    expect(fromApi.text).to.match(/^queue_jobs_stale \d$/m);
  });

  // BullMQ runs a job at least once (a stalled job runs again in another worker), so what must
  // happen once is each job's effect, not each job.
  it('every payment had its effect once: one purchase per settled purchase, one agent per settled registration, each authorization used once on chain, nobody charged twice', async () => {
    const { rows: settled } = await topo.db.query<{
      id: string;
      purpose: string;
      payer: string;
      pay_to: string;
      nonce: string;
      amount_atomic: string;
      tx_hash: string;
    }>(
      "SELECT id, purpose, payer, pay_to, nonce, amount_atomic::text, lower(tx_hash) AS tx_hash FROM payments WHERE status = 'settled'",
    );
    const settledPurchases = settled.filter((p) => p.purpose === 'purchase');
    const settledRegistrations = settled.filter((p) => p.purpose === 'registration');
    expect(settledPurchases).to.have.length(paid);
    expect(settledRegistrations).to.have.length(agents.length);

    // Entitlements and agents exist exactly for the settled payments, each once, in the payment's transaction.
    const { rows: purchases } = await topo.db.query<{ payment_id: string; tx_hash: string }>(
      'SELECT payment_id, lower(tx_hash) AS tx_hash FROM purchases',
    );
    expect(purchases.map((x) => x.payment_id).sort(), 'purchases = settled purchase payments').to.deep.equal(
      settledPurchases.map((p) => p.id).sort(),
    );
    for (const x of purchases)
      expect(x.tx_hash, `purchase of payment ${x.payment_id}`).to.equal(
        settledPurchases.find((p) => p.id === x.payment_id)!.tx_hash,
      );
    const { rows: registered } = await topo.db.query<{ registration_payment_id: string; handle: string }>(
      'SELECT registration_payment_id, handle FROM agents',
    );
    expect(registered.map((a) => a.registration_payment_id).sort(), 'agents = settled registrations').to.deep.equal(
      settledRegistrations.map((p) => p.id).sort(),
    );
    expect(registered.map((a) => a.handle).sort()).to.deep.equal(agents.map((a) => a.handle).sort());

    // Every authorization used on chain is one settled payment, used once, in the transaction the ledger records, and vice versa.
    const { devChain } = topo;
    const key = (payer: string, nonce: string) => `${payer.toLowerCase()}/${nonce.toLowerCase()}`;
    const uses = new Map<string, string[]>();
    for (const log of await devChain.publicClient.getLogs({
      address: devChain.usdc.address,
      event: authorizationUsed,
      fromBlock: 0n,
      toBlock: 'latest',
    })) {
      const k = key(log.args.authorizer!, log.args.nonce!);
      uses.set(k, [...(uses.get(k) ?? []), log.transactionHash!.toLowerCase()]);
    }
    expect([...uses.keys()].sort(), 'authorizations used on chain = settled payments').to.deep.equal(
      settled.map((p) => key(p.payer, p.nonce)).sort(),
    );
    for (const p of settled)
      expect(uses.get(key(p.payer, p.nonce)), `uses on chain of payment ${p.id}`).to.deep.equal([p.tx_hash]);

    // Nobody was charged twice: each agent's outgoing transfers are exactly its settled payments.
    const transfers = await devChain.publicClient.getLogs({
      address: devChain.usdc.address,
      event: transferEvent,
      fromBlock: 0n,
      toBlock: 'latest',
    });
    for (const agent of agents) {
      const out = transfers.filter((t) => t.args.from!.toLowerCase() === agent.address.toLowerCase());
      expect(
        out.map((t) => `${t.transactionHash!.toLowerCase()}/${t.args.to!.toLowerCase()}/${t.args.value}`).sort(),
        `transfers from ${agent.handle}`,
      ).to.deep.equal(
        settled
          .filter((p) => p.payer === agent.address.toLowerCase())
          .map((p) => `${p.tx_hash}/${p.pay_to}/${p.amount_atomic}`)
          .sort(),
      );
    }
  });

  it('no payment lost or doubled: the ledger agrees with the chain', async () => {
    const { rows } = await topo.db.query<{ purpose: string; n: number; txs: number }>(
      "SELECT purpose, count(*)::int AS n, count(DISTINCT tx_hash)::int AS txs FROM payments WHERE status = 'settled' GROUP BY purpose ORDER BY purpose",
    );
    // Settlements are batched: payments settled together share a transaction.
    expect(rows.map((r) => [r.purpose, r.n])).to.deep.equal([
      ['purchase', paid],
      ['registration', 6],
    ]);
    for (const r of rows) expect(r.txs).to.be.within(1, r.n);
    for (const agent of agents) {
      const onChain = await balanceOf(topo.chain, agent.address);
      const { rows: flows } = await topo.db.query<{ earned: string; spent: string }>(
        `SELECT coalesce(sum(amount_atomic) FILTER (WHERE pay_to = $1), 0)::text AS earned,
                coalesce(sum(amount_atomic) FILTER (WHERE payer = $1), 0)::text AS spent
         FROM payments WHERE status = 'settled'`,
        [agent.address.toLowerCase()],
      );
      expect(onChain, agent.handle).to.equal(30_000_000n + BigInt(flows[0]!.earned) - BigInt(flows[0]!.spent));
    }
  });

  it('no document lost: every agent has all ten documents, each published under its key once and reflecting its final sales, and every skill its manifest', async () => {
    for (const agent of agents) {
      const { rows } = await topo.db.query<{ buyers: number }>(
        'SELECT count(DISTINCT buyer_address)::int AS buyers FROM purchases WHERE seller_id = $1',
        [agent.id],
      );
      const score = await eventually(
        async () => {
          const obj = await topo.store.get(agentDocumentKey(agent.handle, 'score.json'));
          const doc = obj && JSON.parse(obj.body.toString());
          return doc?.inputs.uniqueBuyers90d === rows[0]!.buyers ? doc : undefined;
        },
        20_000,
        200,
      );
      expect(score.subject.handle).to.equal(agent.handle);
      const { rows: sales } = await topo.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM purchases WHERE seller_id = $1',
        [agent.id],
      );
      await eventually(
        async () => {
          const obj = await topo.store.get(agentDocumentKey(agent.handle, 'reputation.json'));
          const doc = obj && JSON.parse(obj.body.toString());
          const events = Array.isArray(doc) ? doc : doc?.events;
          return events?.length === sales[0]!.n;
        },
        20_000,
        200,
      );
      for (const name of AGENT_DOCUMENT_NAMES) {
        expect(await topo.store.get(agentDocumentKey(agent.handle, name)), `${agent.handle}/${name}`).to.not.equal(
          null,
        );
      }
      // Published once per key: the bookkeeping holds one row for each of its documents, however many jobs rendered them.
      const keys = AGENT_DOCUMENT_NAMES.map((name) => agentDocumentKey(agent.handle, name));
      const { rows: published } = await topo.db.query<{ key: string; n: number }>(
        'SELECT key, count(*)::int AS n FROM published_documents WHERE key = ANY($1) GROUP BY key',
        [keys],
      );
      expect(published.map((r) => `${r.key} ${r.n}`).sort(), agent.handle).to.deep.equal(
        keys.map((k) => `${k} 1`).sort(),
      );
    }
    for (const post of posts)
      expect(await topo.store.get(postManifestDocument.key({ postId: post.id })), post.id).to.not.equal(null);
    // And the published feed default lists every agent, served from the bucket by either API.
    const feed = await eventually(
      async () => {
        const res = await fetch(`${topo.apis[1]!.url}/api/discovery/agents.json`);
        const body = await res.json();
        return body.items.length === agents.length ? body : undefined;
      },
      20_000,
      200,
    );
    expect(feed.items.map((i: { handle: string }) => i.handle).sort()).to.deep.equal(
      agents.map((a) => a.handle).sort(),
    );
  });

  it('the edge (infra/edge/edge.conf in nginx) routes like the CDN: bucket, API with a query string, API fallback for what is not published', async () => {
    const edge = topo.edgeUrl!;
    const [a, b] = agents;
    // A static path without a query string is the bucket object, byte for byte, CORS-open.
    const fromBucket = await fetch(`${edge}/api/agents/${a!.handle}/score.json`);
    expect(fromBucket.status).to.equal(200);
    expect(fromBucket.headers.get('access-control-allow-origin')).to.equal('*');
    const object = await topo.store.get(agentDocumentKey(a!.handle, 'score.json'));
    expect(Buffer.from(await fromBucket.arrayBuffer()).equals(object!.body)).to.equal(true);
    expect(fromBucket.headers.get('cache-control')).to.equal(object!.cacheControl);
    // With a query string it is the API's rendering of that form (the bucket has only the default).
    const styled = await fetch(`${edge}/api/agents/${a!.handle}/badge.svg?style=for-the-badge`);
    expect(styled.status).to.equal(200);
    const plain = (await topo.store.get(agentDocumentKey(a!.handle, 'badge.svg')))!.body.toString();
    expect(await styled.text())
      .to.match(/^<svg/)
      .and.not.equal(plain);
    // A static path whose object is not published falls back to the API, which never renders on a
    // read: it answers 404 document_not_ready and queues the agent's recompute, which publishes it.
    const healthKey = agentDocumentKey(b!.handle, 'health.json');
    await topo.store.delete(healthKey);
    await topo.db.query('DELETE FROM published_documents WHERE key = $1', [healthKey]);
    const missing = await fetch(`${edge}/api/agents/${b!.handle}/health.json`);
    expect(missing.status).to.equal(404);
    expect(missing.headers.get('content-type')).to.contain('application/problem+json');
    expect((await missing.json()).code).to.equal('document_not_ready');
    const fallback = await eventually(
      async () => {
        const res = await fetch(`${edge}/api/agents/${b!.handle}/health.json?after=not-ready`);
        return res.status === 200 ? res.json() : undefined;
      },
      20_000,
      200,
    );
    expect(fallback.status).to.be.oneOf(['healthy', 'degraded', 'dormant']);
    // Unknown agents get the API's problem+json, not the bucket's XML error.
    const unknown = await fetch(`${edge}/api/agents/nobody-here/score.json`);
    expect(unknown.status).to.equal(404);
    expect(unknown.headers.get('content-type')).to.contain('application/problem+json');
    // Dynamic routes and writes pass through to the APIs.
    const search = await fetch(`${edge}/api/discovery/search?q=skill`);
    expect(search.status).to.equal(200);
    const challenge = await fetch(`${edge}/api/agents/challenge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address: `0x${'1'.repeat(40)}`, handle: 'edge-check' }),
    });
    expect(challenge.status).to.equal(201);
  });

  it('with one worker stopped (SIGTERM, exit 0), the other picks up the work and nothing is lost', async () => {
    const [first, second] = topo.workers;
    expect(await topo.stopNode(first!)).to.equal(0);
    const before = completions(second!).length;
    const post = posts.find((p) => p.price > 0n)!;
    const res = await agents[4]!.payV2(`${topo.apis[0]!.url}/api/posts/${post.id}?view=full`);
    expect(res.status).to.equal(200);
    const { rows } = await topo.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM purchases WHERE seller_id = $1',
      [post.seller.id],
    );
    // The seller's reputation mirror gains the new sale: rendered and published by the remaining worker.
    await eventually(
      async () => {
        const obj = await topo.store.get(agentDocumentKey(post.seller.handle, 'reputation.json'));
        const doc = obj && JSON.parse(obj.body.toString());
        const events = Array.isArray(doc) ? doc : doc?.events;
        return events?.length === rows[0]!.n;
      },
      30_000,
      200,
    );
    // The object is visible a moment before the job that put it logs its completion.
    await eventually(async () => completions(second!).length > before, 10_000, 50);
  });
});
