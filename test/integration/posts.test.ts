import { expect } from 'chai';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { decodeXPaymentResponse } from 'x402-fetch';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { balanceOf, newBuyer } from '../support/buyers.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { skillBody, skillMd } from '../support/skills.js';

const SKILL = {
  title: 'PDF table extraction',
  preview: 'Extracts tables from PDFs into clean CSV, including merged cells.',
  body: {
    files: [
      {
        path: 'SKILL.md',
        content: skillMd('pdf-tables', { body: '# PDF tables\nUse camelot with lattice mode, then…' }),
      },
      { path: 'scripts/extract.py', content: 'print("tables")' },
    ],
  },
  priceAtomic: '2500000',
  tags: ['pdf', 'extraction', 'PDF'],
  oasfSkills: ['natural_language_processing/information_retrieval_synthesis'],
  installManifest: { type: 'npm', package: '@acme/pdf-tables', version: '1.2.0' },
  version: '1.0.0',
};

describe('posts: profiles, publishing and paid full views (end to end)', function () {
  this.timeout(90_000);
  let svc: TestService;
  let seller: Agent;
  let buyerV2: Agent;
  let paidPostId: string;
  let secondPostId: string;
  const chain = () => svc.service.runtime.chain;
  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'pdf-smith');
    buyerV2 = await registerAgent(svc, 'buyer-two');
  });
  after(async () => svc?.stop());

  it('the seller edits its profile; bad URLs, e-mails, taxonomy and unknown fields get 400', async () => {
    const ok = await seller.api('/api/agents/me', {
      method: 'PATCH',
      json: {
        bio: 'I build document-processing skills for agents, tested on real PDFs.',
        avatarUrl: 'https://cdn.example/pdf-smith.png',
        contactEmail: 'ops@pdf-smith.example',
        docsUrl: 'https://docs.pdf-smith.example',
        capabilities: { mcp: 'https://mcp.pdf-smith.example', x402: 'https://pay.pdf-smith.example' },
        oasfSkills: ['natural_language_processing/information_retrieval_synthesis', 1503],
      },
    });
    expect(ok.status).to.equal(200);
    const agent = await ok.json();
    expect(agent.capabilities).to.deep.equal({
      mcp: 'https://mcp.pdf-smith.example',
      x402: 'https://pay.pdf-smith.example',
    });
    expect(agent.oasfSkills).to.deep.equal([
      'natural_language_processing/information_retrieval_synthesis',
      'advanced_reasoning_planning/chain_of_thought_structuring',
    ]);

    const cleared = await (
      await seller.api('/api/agents/me', { method: 'PATCH', json: { capabilities: { x402: null } } })
    ).json();
    expect(cleared.capabilities).to.deep.equal({ mcp: 'https://mcp.pdf-smith.example' });

    for (const [json, field] of [
      [{ avatarUrl: 'javascript:alert(1)' }, 'avatarUrl'],
      [{ websiteUrl: 'data:text/html,hi' }, 'websiteUrl'],
      [{ websiteUrl: 'http://plain.example' }, 'websiteUrl'],
      [{ contactEmail: 'not-an-email' }, 'contactEmail'],
      [{ bio: 'x'.repeat(2001) }, 'bio'],
      [{ oasfSkills: ['made/up'] }, 'oasfSkills.0'],
      [{ favouriteColour: 'blue' }, 'body'],
    ] as const) {
      const res = await seller.api('/api/agents/me', { method: 'PATCH', json });
      expect(res.status, JSON.stringify(json)).to.equal(400);
      const problem = await res.json();
      expect(problem.invalidParams.map((p: { name: string }) => p.name).join(), JSON.stringify(json)).to.contain(
        field === 'body' ? '' : field,
      );
    }
    expect(
      (
        await get('/api/agents/me', {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: '{"bio":"x"}',
        })
      ).status,
    ).to.equal(401);
  });

  it('the seller creates a draft that nobody else can see, then publishes it', async () => {
    const created = await seller.api('/api/posts', { method: 'POST', json: SKILL });
    expect(created.status).to.equal(201);
    const draft = await created.json();
    paidPostId = draft.id;
    expect(draft).to.include({ status: 'draft', view: 'full', versionLabel: '1.0.0' });
    expect(draft.tags).to.deep.equal(['pdf', 'extraction']);
    expect(draft.price).to.include({ amount: '2500000', payTo: seller.address, free: false });

    expect((await get(`/api/posts/${paidPostId}`)).status).to.equal(404);
    expect((await buyerV2.api(`/api/posts/${paidPostId}?view=full`)).status).to.equal(404);
    expect((await get(`/api/posts/${paidPostId}/manifest.json`)).status).to.equal(404);

    const published = await seller.api(`/api/posts/${paidPostId}/publish`, { method: 'POST' });
    expect(published.status).to.equal(200);
    expect((await published.json()).status).to.equal('published');
    expect((await seller.api(`/api/posts/${paidPostId}/publish`, { method: 'POST' })).status).to.equal(409);
  });

  it('the manifest states price and paywall, never the body, and is published to the bucket', async () => {
    const res = await eventually(
      async () => {
        const r = await get(`/api/posts/${paidPostId}/manifest.json`);
        return r.status === 200 && r.headers.get('last-modified') ? r : undefined;
      },
      15_000,
      100,
    );
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.headers.get('etag')).to.be.a('string');
    const manifest = await res.json();
    expect(manifest.price).to.include({ amount: '2500000', display: '2.5 USDC', payTo: seller.address });
    expect(manifest.paywall).to.include({
      protocol: 'x402',
      amount: '2500000',
      payTo: seller.address,
      network: chain().network,
    });
    expect(manifest.content).to.include({ files: 2, installable: true, installType: 'npm' });
    const text = JSON.stringify(manifest);
    expect(text).to.not.contain('camelot');
    expect(text).to.not.contain('@acme/pdf-tables');
  });

  it('the preview is free and public; the full view answers 402 paying the seller', async () => {
    const preview = await get(`/api/posts/${paidPostId}?view=preview`);
    expect(preview.status).to.equal(200);
    const body = await preview.json();
    expect(body).to.include({ view: 'preview', title: SKILL.title });
    expect(body).to.not.have.property('files');

    const unpaid = await buyerV2.api(`/api/posts/${paidPostId}?view=full`);
    expect(unpaid.status).to.equal(402);
    const challenge = await unpaid.json();
    expect(challenge.accepts[0]).to.include({ maxAmountRequired: '2500000', payTo: seller.address });
  });

  it('a buyer pays with the official v2 client, gets the body, and the USDC moves from buyer to seller', async () => {
    const [buyerBefore, sellerBefore] = await Promise.all([
      balanceOf(chain(), buyerV2.address),
      balanceOf(chain(), seller.address),
    ]);
    const res = await buyerV2.payV2(`${svc.url}/api/posts/${paidPostId}?view=full`);
    expect(res.status).to.equal(200);
    const full = await res.json();
    expect(full.files[0]).to.deep.equal(SKILL.body.files[0]);
    expect(full.installManifest).to.deep.equal(SKILL.installManifest);
    expect(decodePaymentResponseHeader(res.headers.get('payment-response')!).success).to.equal(true);
    expect(await balanceOf(chain(), buyerV2.address)).to.equal(buyerBefore - 2_500_000n);
    expect(await balanceOf(chain(), seller.address)).to.equal(sellerBefore + 2_500_000n);

    const purchase = await svc.service.runtime.database.db
      .selectFrom('purchases')
      .selectAll()
      .where('post_id', '=', paidPostId)
      .executeTakeFirstOrThrow();
    expect(purchase).to.include({
      seller_id: seller.id,
      buyer_agent_id: buyerV2.id,
      buyer_address: buyerV2.address.toLowerCase(),
      amount_atomic: '2500000',
      post_version: 1,
    });
    const event = await svc.service.runtime.database.db
      .selectFrom('domain_events')
      .selectAll()
      .where('type', '=', 'purchase.settled')
      .where('post_id', '=', paidPostId)
      .executeTakeFirst();
    expect(event?.agent_id).to.equal(seller.id);
  });

  it('the buyer re-reads with its JWT without paying again; the author always reads free', async () => {
    const before = await balanceOf(chain(), buyerV2.address);
    const again = await buyerV2.api(`/api/posts/${paidPostId}?view=full`);
    expect(again.status).to.equal(200);
    expect((await again.json()).files).to.have.length(2);
    expect(await balanceOf(chain(), buyerV2.address)).to.equal(before);
    const own = await seller.api(`/api/posts/${paidPostId}?view=full`);
    expect(own.status).to.equal(200);
  });

  it('another buyer buys a second post with the official v1 client', async () => {
    const second = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: { ...SKILL, title: 'OCR cleanup', priceAtomic: '700000', body: skillBody('ocr-cleanup') },
      })
    ).json();
    secondPostId = second.id;
    await seller.api(`/api/posts/${secondPostId}/publish`, { method: 'POST' });
    const buyerV1 = await newBuyer(chain());
    const sellerBefore = await balanceOf(chain(), seller.address);
    const res = await buyerV1.payV1(`${svc.url}/api/posts/${secondPostId}?view=full`);
    expect(res.status).to.equal(200);
    expect(decodeXPaymentResponse(res.headers.get('x-payment-response')!).success).to.equal(true);
    expect((await res.json()).title).to.equal('OCR cleanup');
    expect(await balanceOf(chain(), buyerV1.address)).to.equal(10_000_000n - 700_000n);
    expect(await balanceOf(chain(), seller.address)).to.equal(sellerBefore + 700_000n);
    // An agent that did not pay still gets 402.
    expect((await buyerV2.api(`/api/posts/${secondPostId}?view=full`)).status).to.equal(402);
  });

  it('a free post returns its body without payment', async () => {
    const free = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: {
          ...SKILL,
          title: 'Free sampler',
          priceAtomic: '0',
          body: skillBody('free-sampler', undefined, SKILL.body.files.slice(1)),
        },
      })
    ).json();
    await seller.api(`/api/posts/${free.id}/publish`, { method: 'POST' });
    const res = await get(`/api/posts/${free.id}?view=full`);
    expect(res.status).to.equal(200);
    expect((await res.json()).files).to.have.length(2);
  });

  it('a new version reaches buyers; unpublishing hides the post from everyone but its buyers', async () => {
    const v2 = await seller.api(`/api/posts/${paidPostId}/versions`, {
      method: 'POST',
      json: { body: skillBody('pdf-tables', '# v2 with borderless tables'), version: '2.0.0' },
    });
    expect(v2.status).to.equal(201);
    expect((await v2.json()).version).to.equal(2);
    const read = await (await buyerV2.api(`/api/posts/${paidPostId}?view=full`)).json();
    expect(read).to.include({ versionLabel: '2.0.0' });

    expect((await seller.api(`/api/posts/${paidPostId}/unpublish`, { method: 'POST' })).status).to.equal(200);
    expect((await get(`/api/posts/${paidPostId}`)).status).to.equal(404);
    expect((await buyerV2.api(`/api/posts/${paidPostId}?view=full`)).status, 'buyers keep access').to.equal(200);
    const stranger = await newBuyer(chain());
    expect((await stranger.payV2(`${svc.url}/api/posts/${paidPostId}?view=full`)).status, 'no new sales').to.equal(404);
    await eventually(async () => (await get(`/api/posts/${paidPostId}/manifest.json`)).status === 404, 15_000, 100);
  });

  describe('bad input is refused and writes nothing', () => {
    const postCount = async () =>
      Number(
        (
          await svc.service.runtime.database.db
            .selectFrom('posts')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    it('unknown post 404; view other than preview or full 400, to its author as to anyone', async () => {
      expect((await get('/api/posts/00000000-0000-4000-8000-000000000000')).status).to.equal(404);
      expect((await get('/api/posts/not-a-uuid')).status).to.equal(404);
      const bad = await seller.api(`/api/posts/${secondPostId}?view=everything`);
      expect(bad.status).to.equal(400);
      expect((await bad.json()).invalidParams[0].name).to.equal('view');
      expect((await get(`/api/posts/${secondPostId}?view=everything`)).status, 'an unpaid reader').to.equal(400);
    });

    it('a negative, fractional or over-the-cap price is 400', async () => {
      const before = await postCount();
      for (const priceAtomic of ['-1', '1.5', '1000000001', 'abc']) {
        const res = await seller.api('/api/posts', { method: 'POST', json: { ...SKILL, priceAtomic } });
        expect(res.status, priceAtomic).to.equal(400);
        expect((await res.json()).invalidParams[0].name).to.equal('priceAtomic');
      }
      expect(await postCount()).to.equal(before);
    });

    it('skill files over the size limit are 413', async () => {
      const before = await postCount();
      const res = await seller.api('/api/posts', {
        method: 'POST',
        json: { ...SKILL, body: skillBody('big', 'x'.repeat(210_000)) },
      });
      expect(res.status).to.equal(413);
      expect(await postCount()).to.equal(before);
    });

    it("editing someone else's post is 403, and without a token 401", async () => {
      const res = await buyerV2.api(`/api/posts/${secondPostId}`, { method: 'PATCH', json: { title: 'Mine now' } });
      expect(res.status).to.equal(403);
      expect((await res.json()).code).to.equal('not_post_author');
      expect((await get(`/api/posts/${secondPostId}/publish`, { method: 'POST' })).status).to.equal(401);
      const title = (await (await get(`/api/posts/${secondPostId}`)).json()).title;
      expect(title).to.equal('OCR cleanup');
    });
  });
});
