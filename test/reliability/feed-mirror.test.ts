import { expect } from 'chai';
import pg from 'pg';
import { createWalletClient, http, parseEventLogs } from 'viem';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer, type Buyer } from '../support/buyers.js';
import { testClient } from '../support/anvil.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { identityRegistryAbi } from '../../src/platform/chain/identity-registry.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { skillBody, skillName } from '../support/skills.js';

type Item = Record<string, unknown>;
interface Page {
  items: Item[];
  nextCursor: string | null;
  nextSince: string | null;
  hasMore: boolean;
}
type Kind = 'agents' | 'posts';
const KEY: Record<Kind, (i: Item) => string> = { agents: (i) => i.handle as string, posts: (i) => i.id as string };

const skill = (title: string, tags: string[], price = '1500000') => ({
  title,
  preview: `${title}: what it does, in a few words.`,
  body: skillBody(skillName(title), `# ${title}`),
  priceAtomic: price,
  tags,
  oasfSkills: ['natural_language_processing/information_retrieval_synthesis'],
  oasfDomains: ['technology/software_engineering'],
});

/**
 * A crawler walks both feeds to the end, then polls with `since` and applies what it receives to
 * its mirror while the marketplace changes under it. Once the workers have settled, the mirror
 * must equal a fresh walk field by field: an item never changes at the position a crawler already
 * passed, every change moves it.
 */
describe('feed mirror: a polling crawler ends equal to a fresh walk', function () {
  this.timeout(120_000);
  let svc: TestService;
  let pool: pg.Pool;
  let seller: Agent;
  let other: Agent;
  let rival: Agent;

  const fetchPage = async (kind: Kind, params: Record<string, string>) => {
    const res = await fetch(`${svc.url}/api/discovery/${kind}.json?${new URLSearchParams(params)}`);
    expect(res.status, `${kind} ${JSON.stringify(params)}`).to.equal(200);
    return (await res.json()) as Page;
  };
  /** Every item of a feed, walked from its start with small pages. */
  const walk = async (kind: Kind) => {
    const items = new Map<string, Item>();
    let page = await fetchPage(kind, { limit: '3' });
    for (;;) {
      for (const i of page.items) items.set(KEY[kind](i), i);
      if (!page.nextCursor) break;
      page = await fetchPage(kind, { limit: '3', cursor: page.nextCursor });
    }
    return { items, since: page.nextSince! };
  };

  class Crawler {
    mirrors = {} as Record<Kind, Map<string, Item>>;
    since = {} as Record<Kind, string>;
    async start() {
      for (const kind of ['agents', 'posts'] as const) {
        const { items, since } = await walk(kind);
        this.mirrors[kind] = items;
        this.since[kind] = since;
      }
    }
    /** One poll of each feed up to its end, applied to the mirror in feed order. */
    async poll() {
      for (const kind of ['agents', 'posts'] as const) {
        for (;;) {
          const p = await fetchPage(kind, { limit: '2', since: this.since[kind] });
          for (const i of p.items) this.mirrors[kind].set(KEY[kind](i), i);
          this.since[kind] = p.nextSince ?? this.since[kind];
          if (!p.hasMore) break;
        }
      }
    }
  }

  /** Field-by-field differences between a mirror and a fresh walk of the same feed. */
  const differences = (kind: Kind, mirror: Map<string, Item>, fresh: Map<string, Item>) => {
    const out: string[] = [];
    for (const key of new Set([...mirror.keys(), ...fresh.keys()])) {
      const m = mirror.get(key);
      const f = fresh.get(key);
      if (!m || !f) {
        out.push(`${kind}/${key}: ${m ? 'only in the mirror' : 'only in the fresh walk'}`);
        continue;
      }
      for (const field of new Set([...Object.keys(m), ...Object.keys(f)])) {
        const a = JSON.stringify(m[field]);
        const b = JSON.stringify(f[field]);
        if (a !== b) out.push(`${kind}/${key}.${field}: mirror ${a}, fresh walk ${b}`);
      }
    }
    return out;
  };

  /** Nothing left to do: events dispatched, no job queued or running, every change indexed. */
  const settled = async () => {
    const { rows } = await pool.query<{ n: number }>(`
      SELECT (SELECT count(*) FROM domain_events WHERE dispatched_at IS NULL)
           + (SELECT count(*) FROM agents WHERE change_txid >= coalesce((SELECT watermark FROM projection_watermarks WHERE projection = 'agent'), '0'::xid8))
           + (SELECT count(*) FROM posts WHERE change_txid >= coalesce((SELECT watermark FROM projection_watermarks WHERE projection = 'post'), '0'::xid8))
           + (SELECT count(*) FROM posts WHERE change_txid >= coalesce((SELECT watermark FROM projection_watermarks WHERE projection = 'skill-documents'), '0'::xid8)) AS n`);
    if (Number(rows[0]!.n) > 0) return false;
    for (const queue of Object.values(svc.service.runtime.queues)) {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
      if (Object.values(counts).some((n) => n > 0)) return false;
    }
    return true;
  };
  const settle = () => eventually(settled, 30_000, 100);

  /** The feed time of the newest entry each feed serves, as the API writes it. */
  const newestServed = async (): Promise<Record<Kind, string>> => {
    const at = `to_char(max(f.feed_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
    const { rows } = await pool.query(`
      SELECT (SELECT ${at} FROM feed_entries f JOIN agents a ON a.id = f.entity_id WHERE f.kind = 'agent') AS agents,
             (SELECT ${at} FROM feed_entries f JOIN posts p ON p.id = f.entity_id WHERE f.kind = 'post' AND p.status <> 'draft') AS posts`);
    return rows[0];
  };

  const expectMirrorEqualsFreshWalk = async (crawler: Crawler, kinds: Kind[] = ['agents', 'posts']) => {
    await settle();
    const newest = await newestServed();
    // The API reads a feed's version at most every 200 ms, so a page it keeps can be that old:
    // both the crawler and the fresh walk must have reached the newest entry.
    await eventually(
      async () => {
        await crawler.poll();
        return kinds.every((k) => crawler.since[k] === newest[k]);
      },
      10_000,
      50,
    );
    const fresh = await eventually(
      async () => {
        const walks = await Promise.all(kinds.map(walk));
        return walks.every((w, i) => w.since === newest[kinds[i]!]) ? walks : undefined;
      },
      10_000,
      50,
    );
    const diffs = kinds.flatMap((kind, i) => differences(kind, crawler.mirrors[kind], fresh[i]!.items));
    expect(diffs, 'mirror against a fresh walk').to.deep.equal([]);
  };

  const publish = async (agent: Agent, s: ReturnType<typeof skill>) => {
    const post = await (await agent.api('/api/posts', { method: 'POST', json: s })).json();
    expect((await agent.api(`/api/posts/${post.id}/publish`, { method: 'POST' })).status).to.equal(200);
    return post.id as string;
  };
  const buy = async (buyer: Buyer, postId: string) =>
    expect((await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`)).status).to.equal(200);

  before(async () => {
    svc = await startTestService();
    pool = new pg.Pool({ connectionString: svc.database.url, max: 4 });
    seller = await registerAgent(svc, 'mirror-seller');
    other = await registerAgent(svc, 'mirror-other');
    rival = await registerAgent(svc, 'mirror-rival');
  });
  after(async () => {
    await pool?.end();
    await svc?.stop();
  });

  it('through profile edits, sales, skill edits, publish and unpublish, an ERC-8004 identity and a rankings run', async () => {
    const profile = {
      bio: 'Extracts tables and text from scanned documents, tested on real invoices.',
      websiteUrl: 'https://mirror.example',
      contactEmail: 'ops@mirror.example',
      docsUrl: 'https://docs.mirror.example',
    };
    expect(
      (await seller.api('/api/agents/me', { method: 'PATCH', json: { displayName: 'Mirror Seller', ...profile } }))
        .status,
    ).to.equal(200);
    const tables = await publish(seller, skill('PDF tables', ['pdf', 'tables']));
    const ocr = await publish(seller, skill('OCR cleanup', ['ocr'], '700000'));
    const draft = await (
      await seller.api('/api/posts', { method: 'POST', json: skill('Receipt parser', ['receipts']) })
    ).json();
    const poems = await publish(other, skill('Poetry helper', ['poetry'], '0'));
    await settle();
    // The rankings and population statistics run every 15 minutes; run them now, and again once
    // scores moved.
    const rankings = () => populationStatsJob.run(jobContext(svc.service.runtime), {});
    await rankings();

    const crawler = new Crawler();
    await crawler.start();
    expect([...crawler.mirrors.posts.keys()]).to.have.members([tables, ocr, poems]);

    const chain = svc.service.runtime.chain;
    const [b1, b2] = await Promise.all([newBuyer(chain), newBuyer(chain)]);
    const steps: Array<[string, () => Promise<unknown>]> = [
      [
        'the other agent edits its profile',
        () =>
          other.api('/api/agents/me', {
            method: 'PATCH',
            json: { displayName: 'Other', ...profile, websiteUrl: 'https://other.example' },
          }),
      ],
      [
        'a profile edit',
        () => seller.api('/api/agents/me', { method: 'PATCH', json: { displayName: 'Mirror Seller Co.' } }),
      ],
      ['a first sale', () => buy(b1, tables)],
      // The same buyer again: revenue and settlements move, unique buyers do not.
      ['a repeat sale', () => buy(b1, ocr)],
      [
        'a skill edited',
        () =>
          seller.api(`/api/posts/${tables}`, {
            method: 'PATCH',
            json: { title: 'PDF tables, merged cells too', priceAtomic: '1700000' },
          }),
      ],
      ['a sale at the new price', () => buy(b2, tables)],
      ['a draft published', () => seller.api(`/api/posts/${draft.id}/publish`, { method: 'POST' })],
      ['a skill unpublished', () => seller.api(`/api/posts/${ocr}/unpublish`, { method: 'POST' })],
      [
        'a new version',
        () =>
          seller.api(`/api/posts/${tables}/versions`, {
            method: 'POST',
            json: { body: skillBody(skillName('PDF tables'), '# PDF tables v2') },
          }),
      ],
      [
        'an ERC-8004 identity',
        async () => {
          await testClient(chain).setBalance({ address: seller.address, value: 10n ** 18n });
          const wallet = createWalletClient({
            account: seller.account,
            chain: localChain(chain.chainId, chain.rpcUrl),
            transport: http(chain.rpcUrl),
          });
          const hash = await wallet.writeContract({
            address: chain.identityRegistry,
            abi: identityRegistryAbi,
            functionName: 'register',
            args: ['data:application/json;base64,e30='],
          });
          const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
          const [registered] = parseEventLogs({
            abi: identityRegistryAbi,
            logs: receipt.logs,
            eventName: 'Registered',
          }) as unknown as Array<{ args: { agentId: bigint } }>;
          const res = await seller.api('/api/agents/me', {
            method: 'PATCH',
            json: { erc8004AgentId: registered!.args.agentId.toString() },
          });
          expect(res.status).to.equal(200);
        },
      ],
      // A newcomer passes the other agent, which does not change itself afterwards.
      [
        'a newcomer rises',
        async () => {
          await rival.api('/api/agents/me', {
            method: 'PATCH',
            json: { displayName: 'Rival', ...profile, websiteUrl: 'https://rival.example' },
          });
          await publish(rival, skill('Table cleanup', ['tables']));
          await publish(rival, skill('Invoice fields', ['invoices']));
        },
      ],
    ];
    for (const [name, step] of steps) {
      const res = await step();
      if (res instanceof Response) expect(res.ok, `${name}: ${res.status} ${await res.text()}`).to.equal(true);
      await crawler.poll();
    }
    await settle();
    await rankings();
    await crawler.poll();
    // What the daily refresh writes for an agent whose score only decayed: less than a hundredth.
    await pool.query(
      `UPDATE agent_metrics SET score = score - 0.0004, raw_score = raw_score - 0.0004 WHERE agent_id = $1`,
      [seller.id],
    );

    await expectMirrorEqualsFreshWalk(crawler);
    // The fresh walk is the marketplace as it is, not a feed that stopped moving.
    const agent = crawler.mirrors.agents.get('mirror-seller')!;
    const metrics = (
      await pool.query(
        `SELECT score, unique_buyers_90d, revenue_atomic_90d::text AS revenue FROM agent_metrics WHERE agent_id = $1`,
        [seller.id],
      )
    ).rows[0];
    expect(agent).to.include({
      displayName: 'Mirror Seller Co.',
      verified: true,
      uniqueBuyers90d: 2,
      publishedSkills: 2,
    });
    expect(agent.revenueUsdc90d).to.equal(Number(metrics.revenue) / 1e6);
    expect(Math.abs((agent.score as number) - metrics.score)).to.be.lessThan(0.005 + 1e-9);
    const posts = crawler.mirrors.posts;
    expect(posts.get(tables)).to.include({
      title: 'PDF tables, merged cells too',
      priceAtomic: '1700000',
      version: 2,
      status: 'published',
    });
    expect(posts.get(ocr)).to.include({ status: 'unpublished' });
    expect(posts.get(draft.id)).to.include({ status: 'published' });
    // The ranking ranks by the scores the feed shows.
    const top = (await fetchPage('agents', { sort: 'top' })).items;
    expect(top.map((i) => [i.handle, i.rank])).to.deep.equal([
      ['mirror-seller', 1],
      ['mirror-rival', 2],
      ['mirror-other', 3],
    ]);
    for (const i of top) expect(i.score).to.equal(crawler.mirrors.agents.get(i.handle as string)!.score);
  });

  it('an author renamed (handles have no API; an operator would do it) moves its skills with the new handle', async () => {
    const crawler = new Crawler();
    await crawler.start();
    await pool.query(`UPDATE agents SET handle = 'mirror-poet' WHERE id = $1`, [other.id]);
    await crawler.poll();
    await expectMirrorEqualsFreshWalk(crawler, ['posts']);
    const authored = [...crawler.mirrors.posts.values()].filter((p) => p.title === 'Poetry helper');
    expect(authored.map((p) => p.author)).to.deep.equal([{ handle: 'mirror-poet' }]);
  });
});
