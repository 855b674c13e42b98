import { expect } from 'chai';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { skillBody, skillName } from '../support/skills.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { agentDocumentsJob } from '../../jobs/agent-documents.job.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { loadFacts } from '../../src/domain/scoring/load-facts.js';

const skill = (title: string, priceAtomic: string, tags: string[] = []) => ({
  title,
  preview: `${title}, preview`,
  body: skillBody(skillName(title), `# ${title}`),
  priceAtomic,
  tags,
});

describe('prices that pay for their settlement, and sales to oneself that count for nothing', function () {
  this.timeout(90_000);
  let svc: TestService;
  let seller: Agent;
  const get = (path: string) => fetch(`${svc.url}${path}`);
  const create = (author: Agent, json: unknown) => author.api('/api/posts', { method: 'POST', json });

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'price-seller');
  });
  after(async () => svc?.stop());

  describe('the minimum price (MIN_PRICE_ATOMIC, 10000 atomic units by default)', () => {
    it('when a seller lists a paid skill below the minimum, then it gets 422 price_below_minimum naming the minimum, and nothing is created', async () => {
      for (const priceAtomic of ['1', '9999']) {
        const res = await create(seller, skill(`Cheap skill ${priceAtomic}`, priceAtomic));
        expect(res.status, priceAtomic).to.equal(422);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
        const problem = await res.json();
        expect(problem).to.include({ status: 422, code: 'price_below_minimum', minimumAtomic: '10000' });
        expect(problem.detail).to.contain('10000 atomic USDC (0.01 USDC)');
        expect(problem.invalidParams[0]).to.include({ name: 'priceAtomic', in: 'body' });
      }
      const { db } = svc.service.runtime.database;
      const mine = await db.selectFrom('posts').select('id').where('author_id', '=', seller.id).execute();
      expect(mine).to.deep.equal([]);
    });

    it('a free skill and a skill at exactly the minimum are created', async () => {
      for (const priceAtomic of ['0', '10000']) {
        const res = await create(seller, skill(`Skill at ${priceAtomic}`, priceAtomic));
        expect(res.status, priceAtomic).to.equal(201);
        expect((await res.json()).price.amount).to.equal(priceAtomic);
      }
    });

    it('when a seller lowers a paid price below the minimum, then it gets 422 and the price stays; it may make the skill free', async () => {
      const id = (await (await create(seller, skill('Repriced skill', '250000'))).json()).id as string;
      const edit = (priceAtomic: string) =>
        seller.api(`/api/posts/${id}`, { method: 'PATCH', json: { priceAtomic, title: 'Renamed skill' } });
      const refused = await edit('5000');
      expect(refused.status).to.equal(422);
      expect((await refused.json()).code).to.equal('price_below_minimum');
      const kept = await (await seller.api(`/api/posts/${id}?view=full`)).json();
      expect(kept).to.deep.include({ title: 'Repriced skill' });
      expect(kept.price.amount).to.equal('250000');
      const free = await edit('0');
      expect(free.status).to.equal(200);
      expect((await free.json()).price).to.include({ amount: '0', free: true });
    });

    it('the OpenAPI document states the minimum: in the operations that set a price and in the paid read x402 crawlers read', async () => {
      const doc = await (await get('/openapi.json')).json();
      const ops = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((p) => Object.values(p));
      const op = (id: string) => ops.find((o) => o.operationId === id);
      for (const id of ['createPost', 'updatePost']) {
        expect(op(id).description, id).to.contain('at least 10000 atomic USDC (0.01 USDC)');
        expect(op(id).responses['422'].description, id).to.contain('price_below_minimum');
      }
      expect(op('getPost')['x-payment-info'].price).to.include({ mode: 'dynamic', min: '0.01', max: '1000.00' });
    });
  });

  describe("a seller's purchases of its own skills", () => {
    let postId: string;
    const ctx = () => jobContext(svc.service.runtime);
    const facts = async () => {
      const { db } = svc.service.runtime.database;
      const agent = await db.selectFrom('agents').selectAll().where('id', '=', seller.id).executeTakeFirstOrThrow();
      return loadFacts(db, agent, null, new Date());
    };
    /**
     * The seller's documents recomputed now, then the published score inputs, badge and reputation
     * mirror once they say what `expected` says (a recompute queued before a purchase may publish
     * after this one; the one its purchase queued publishes last).
     */
    const published = async (expected: { settlementCount90d: number; uniqueBuyers90d: number }) => {
      await agentDocumentsJob.run(ctx(), { agentId: seller.id });
      const text = async (path: string) => (await get(`/api/agents/price-seller/${path}`)).text();
      return eventually(
        async () => {
          const inputs = JSON.parse(await text('score.json')).inputs;
          const badge = await text('badge.svg?kind=buyers');
          const reputation = JSON.parse(await text('reputation.json'));
          const settled =
            inputs.settlementCount90d === expected.settlementCount90d &&
            inputs.uniqueBuyers90d === expected.uniqueBuyers90d &&
            badge.includes(`buyers 90d: ${expected.uniqueBuyers90d}`) &&
            reputation.length === expected.settlementCount90d;
          return settled && { inputs, reputation };
        },
        15_000,
        100,
      );
    };
    const trending = async () => {
      await populationStatsJob.run(ctx(), {});
      const body = await (await get('/api/discovery/trending.json')).json();
      return body.agents.find((a: { handle: string }) => a.handle === 'price-seller');
    };
    const tagScore = async () => {
      const body = await (await get('/api/discovery/tags')).json();
      return body.tags.find((t: { tag: string }) => t.tag === 'wash-check')?.score7d;
    };

    before(async () => {
      const created = await (await create(seller, skill('Self-bought skill', '1000000', ['wash-check']))).json();
      postId = created.id;
      expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' })).status).to.equal(200);
    });

    it('when the seller buys its own skill from its own wallet, twice, then the payments are recorded but no sales figure, score input, badge or ranking moves', async () => {
      // Without its token, the seller's wallet pays like any stranger's would.
      for (let i = 0; i < 2; i++) {
        const res = await seller.payV2(`${svc.url}/api/posts/${postId}?view=full`);
        expect(res.status).to.equal(200);
      }
      const { db } = svc.service.runtime.database;
      const recorded = await db
        .selectFrom('purchases')
        .select(['buyer_address', 'buyer_agent_id'])
        .where('post_id', '=', postId)
        .execute();
      expect(recorded).to.have.length(2);
      expect(recorded.every((p) => p.buyer_address === seller.address.toLowerCase() && p.buyer_agent_id === seller.id))
        .to.be.true;
      expect(await facts()).to.include({
        settlementCount90d: 0,
        settlementCountAll: 0,
        uniqueBuyers90d: 0,
        repeatBuyers90d: 0,
        agentBuyers90d: 0,
        lastSettleAt: null,
      });
      const { inputs } = await published({ settlementCount90d: 0, uniqueBuyers90d: 0 });
      expect(inputs).to.include({ repeatBuyers90d: 0, revenueUsdc90d: 0, daysSinceLastSettle: null });
      expect(await trending(), 'trending').to.equal(undefined);
      expect(await tagScore(), 'tag trend: the listing only').to.equal(1);
      // The seller still reads its own skill.
      expect((await seller.api(`/api/posts/${postId}?view=full`)).status).to.equal(200);
    });

    it("when another wallet buys the skill, then that sale counts, and the seller's own still do not", async () => {
      const buyer = await newBuyer(svc.service.runtime.chain);
      expect((await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`)).status).to.equal(200);
      const counted = await facts();
      expect(counted).to.include({ settlementCount90d: 1, uniqueBuyers90d: 1, repeatBuyers90d: 0, agentBuyers90d: 0 });
      expect(counted.revenueAtomic90d).to.equal(1_000_000n);
      const { inputs, reputation } = await published({ settlementCount90d: 1, uniqueBuyers90d: 1 });
      expect(inputs).to.include({ repeatBuyers90d: 0, revenueUsdc90d: 1 });
      expect(reputation.map((e: { clientAddress: string }) => e.clientAddress)).to.deep.equal([buyer.address]);
      // The ranking is published through the bucket: read until the sale shows.
      const ranked = await eventually(trending, 15_000, 100);
      expect(ranked).to.include({ sales72h: 1, buyers72h: 1, revenueUsdc72h: 1 });
      const tagged = await eventually(
        async () => ((await tagScore()) === 1 + 3 ? 1 + 3 : undefined),
        15_000,
        100,
      ).catch(async () => tagScore());
      expect(tagged, 'one listing and one paid purchase').to.equal(1 + 3);
    });
  });
});
