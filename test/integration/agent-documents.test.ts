import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { sql } from 'kysely';
import pg from 'pg';
import { createWalletClient, http, parseEventLogs } from 'viem';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { testClient } from '../support/anvil.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { identityRegistryAbi } from '../../src/platform/chain/identity-registry.js';
import { schemaErrors, SCHEMAS } from '../../src/documents/validate.js';
import { a2aV1Members } from '../../src/documents/a2a-agent-card.schema.js';
import { COMPONENTS, DIMENSION_WEIGHTS } from '../../src/domain/scoring/methodology.js';
import { REGISTRATION_TYPE } from '../../src/domain/identity/erc8004.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { agentDocumentsBatchJob, agentDocumentsJob } from '../../jobs/agent-documents.job.js';
import { recomputeAllJob } from '../../jobs/recompute-all.job.js';
import {
  agentDocumentKey,
  refreshAndRenderAgentDocuments,
  refreshAndRenderAgentDocumentsMany,
  type AgentDocumentName,
  type RenderedDocument,
} from '../../src/domain/agents/agent-documents.js';
import { publishDocuments } from '../../src/domain/publishing/publish-document.js';
import { recomputeAndPublishAgentDocuments } from '../../src/domain/agents/publish-agent-documents.use-cases.js';
import { agentPageDocument } from '../../src/documents/pages/pages.document.js';
import { saveRenderStates } from '../../src/data/documents.repository.js';
import { findPublishedSkills, readPublishedSkillsDigests } from '../../src/data/posts.repository.js';
import { readStoredSimilar, recomputeAndStoreSimilar } from '../../src/domain/agents/similar.js';
import { skillBody, skillName } from '../support/skills.js';
import { captureStatements } from '../support/explain.js';
import { assertCompletionPct, assertPublishedScoreInvariants } from '../support/score-invariants.js';

const skill = (title: string, tags: string[], price = '1500000') => ({
  title,
  preview: `${title}, preview`,
  body: skillBody(skillName(title), `# ${title}`),
  priceAtomic: price,
  tags,
  oasfSkills: ['natural_language_processing/information_retrieval_synthesis'],
  installManifest: { type: 'npm', package: '@acme/skill' },
});

describe('per-agent documents, driven by real registrations, skills and purchases', function () {
  this.timeout(90_000);
  let svc: TestService;
  let seller: Agent;
  let lookalike: Agent;
  const chain = () => svc.service.runtime.chain;
  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);
  /** The bucket's copy through the edge (Last-Modified is set only there), once `ready` holds. */
  const published = async <T>(
    path: string,
    ready: (r: T) => boolean = () => true,
    parse: (r: Response) => Promise<T> = (r) => r.json(),
  ) =>
    eventually(
      async () => {
        const res = await get(path);
        if (res.status !== 200 || !res.headers.get('last-modified')) return undefined;
        const body = await parse(res);
        return ready(body) ? { res, body } : undefined;
      },
      15_000,
      100,
    );

  /**
   * Every event dispatched (a busy machine dispatches them late) and every document job they queued
   * done. A recompute running beside a page writes the metrics row the page records, and has the
   * next page render.
   */
  const drained = async () => {
    const { db } = svc.service.runtime.database;
    const { n } = await db
      .selectFrom('domain_events')
      .select(db.fn.countAll().as('n'))
      .where('dispatched_at', 'is', null)
      .executeTakeFirstOrThrow();
    const jobs = await svc.service.runtime.queues.documents.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return Number(n) === 0 && Object.values(jobs).every((c) => c === 0);
  };

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'doc-seller');
    lookalike = await registerAgent(svc, 'doc-lookalike');
  });
  after(async () => svc?.stop());

  it('an unknown handle gets 404 problem+json', async () => {
    const res = await get('/api/agents/nobody-here/agent-card.json');
    expect(res.status).to.equal(404);
    expect(res.headers.get('content-type')).to.match(/problem\+json/);
    expect((await res.json()).code).to.equal('agent_not_found');
  });

  it('a new agent is dormant with a score of 0 and a checklist that says what to do', async () => {
    const { body: score } = await published<any>('/api/agents/doc-seller/score.json');
    expect(score.score.health).to.deep.equal({ status: 'dormant', multiplier: 0 });
    expect(score.score.score).to.equal(0);
    const { body: bp } = await published<any>('/api/agents/doc-seller/best-practices.json');
    expect(bp).to.include({
      $schema: `${svc.config.publicBaseUrl ?? `http://localhost:${svc.config.port}`}/spec/best-practices-v1.json`,
      source: 'skill-market',
    });
    expect(bp.agent).to.deep.equal({ handle: 'doc-seller' });
    expect(bp.items).to.have.length(10);
    expect(bp.items.find((i: any) => i.id === 'documentation')).to.include({ status: 'missing' });
  });

  it('with a full profile, an ERC-8004 identity and two skills, the agent becomes healthy and its identity resolves', async () => {
    // The seller registers in the ERC-8004 IdentityRegistry from its own wallet, with a conformant file.
    const c = chain();
    await testClient(c).setBalance({ address: seller.address, value: 10n ** 18n });
    const registration = {
      type: REGISTRATION_TYPE,
      name: 'doc-seller',
      description: 'Document skills',
      image: 'https://cdn.example/doc.png',
      services: [{ name: 'A2A', endpoint: `${svc.url}/api/agents/doc-seller/agent-card.json`, version: '0.3.0' }],
      x402Support: true,
      active: true,
      registrations: [] as Array<{ agentId: number; agentRegistry: string }>,
    };
    const wallet = createWalletClient({
      account: seller.account,
      chain: localChain(c.chainId, c.rpcUrl),
      transport: http(c.rpcUrl),
    });
    const hash = await wallet.writeContract({
      address: c.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'register',
      args: ['data:application/json;base64,e30='],
    });
    const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
    const [registered] = parseEventLogs({
      abi: identityRegistryAbi,
      logs: receipt.logs,
      eventName: 'Registered',
    }) as unknown as Array<{ args: { agentId: bigint } }>;
    const agentId = registered!.args.agentId;
    registration.registrations.push({
      agentId: Number(agentId),
      agentRegistry: `eip155:${c.chainId}:${c.identityRegistry}`,
    });
    const uri = `data:application/json;base64,${Buffer.from(JSON.stringify(registration)).toString('base64')}`;
    const setUri = await wallet.writeContract({
      address: c.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'setAgentURI',
      args: [agentId, uri],
    });
    await c.publicClient.waitForTransactionReceipt({ hash: setUri });

    const notMine = await lookalike.api('/api/agents/me', {
      method: 'PATCH',
      json: { erc8004AgentId: agentId.toString() },
    });
    expect(notMine.status).to.equal(422);
    expect((await notMine.json()).code).to.equal('token_not_owned');

    const patched = await seller.api('/api/agents/me', {
      method: 'PATCH',
      json: {
        displayName: 'Doc Seller <script>alert(1)</script>',
        bio: 'Skills for documents: <b>tables</b>, OCR and summaries, tested on real files.',
        avatarUrl: 'https://cdn.example/doc.png',
        websiteUrl: 'https://doc.example',
        contactEmail: 'ops@doc.example',
        docsUrl: 'https://docs.doc.example',
        capabilities: { mcp: 'https://mcp.doc.example', x402: 'https://pay.doc.example' },
        oasfSkills: ['natural_language_processing/information_retrieval_synthesis'],
        oasfDomains: ['technology'],
        erc8004AgentId: agentId.toString(),
      },
    });
    expect(patched.status).to.equal(200);
    for (const s of [skill('PDF tables', ['pdf', 'tables']), skill('OCR cleanup', ['ocr', 'pdf'])]) {
      const post = await (await seller.api('/api/posts', { method: 'POST', json: s })).json();
      await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    }

    const { body: health } = await published<any>('/api/agents/doc-seller/health.json', (h) => h.status === 'healthy');
    expect(health).to.include({ multiplier: 1, publishedSkillCount: 2 });

    const { body: identity } = await published<any>('/api/agents/doc-seller/identity', (i) => Boolean(i.erc8004));
    expect(identity.erc8004).to.include({
      tokenId: agentId.toString(),
      owner: seller.address,
      agentWallet: seller.address,
      ownerMatchesWallet: true,
      payoutMatchesAgentWallet: true,
    });
    expect(identity.erc8004.registrationErrors).to.deep.equal([]);
    expect(identity.erc8004.registration.name).to.equal('doc-seller');

    const { body: bp } = await published<any>('/api/agents/doc-seller/best-practices.json', (b) => b.passed === 10);
    expect(bp).to.include({ passed: 10, partial: 0, missing: 0, completionPct: 100 });
    expect(bp.items.every((i: any) => i.howToFix === null)).to.equal(true);
  });

  it('the agent card is a valid A2A v1.0 and v0.3 card with its skills, x-market-install and links', async () => {
    const { body: card, res } = await published<any>(
      '/api/agents/doc-seller/agent-card.json',
      (c) => c.skills.length === 2,
    );
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(schemaErrors(SCHEMAS.agentCard, card)).to.deep.equal([]);
    expect(schemaErrors(SCHEMAS.agentCardV1, a2aV1Members(card))).to.deep.equal([]);
    expect(schemaErrors(SCHEMAS.agentCardV03, card)).to.deep.equal([]);
    expect(card.supportedInterfaces).to.have.length(1);
    expect(card.supportedInterfaces[0]).to.include({ protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
    expect(card.supportedInterfaces[0].url).to.match(/\/api\/agents\/doc-seller\/agent-card\.json$/);
    // The same endpoint the v0.3 way.
    expect(card).to.include({ protocolVersion: '0.3.0', preferredTransport: 'HTTP+JSON' });
    expect(card.url).to.equal(card.supportedInterfaces[0].url);
    expect(card.signatures).to.have.length(2);
    expect(card.skills.map((s: any) => s.name)).to.have.members(['PDF tables', 'OCR cleanup']);
    const install = card.capabilities.extensions.find((e: any) =>
      e.uri.endsWith('/spec/x-market-install-v1.json'),
    ).params;
    expect(install.skills).to.have.length(2);
    expect(install.payment.payTo.toLowerCase()).to.equal(seller.address.toLowerCase());
    const links = card.capabilities.extensions.find((e: any) => e.uri.endsWith('/spec/market-score-v1.json')).params;
    expect(links).to.include.keys('score', 'bestPractices', 'badge', 'identity');
  });

  it('a settled purchase shows in the seller score, health and badge within seconds', async () => {
    const before = (await published<any>('/api/agents/doc-seller/score.json')).body;
    const post = (await (await get('/api/agents/doc-seller/agent-card.json')).json()).skills[0];
    // Where a crawler polling the agent feed stands now.
    let since = (await (await get('/api/discovery/agents.json?limit=200')).json()).nextSince as string;
    for (;;) {
      const p = await (await get(`/api/discovery/agents.json?limit=200&since=${encodeURIComponent(since)}`)).json();
      since = p.nextSince;
      if (!p.hasMore) break;
    }
    const buyer = await newBuyer(chain());
    const started = Date.now();
    expect((await buyer.payV2(`${svc.url}/api/posts/${post.id}?view=full`)).status).to.equal(200);

    const { body: score } = await published<any>(
      '/api/agents/doc-seller/score.json',
      (s) => s.inputs.settlementCount90d === 1,
    );
    const elapsed = Date.now() - started;
    expect(elapsed, 'freshness').to.be.lessThan(5000);
    expect(score.inputs).to.include({ uniqueBuyers90d: 1, settlementCount90d: 1, revenueUsdc90d: 1.5 });
    expect(score.inputs.daysSinceLastSettle).to.be.lessThan(0.01);
    expect(score.score.rawScore).to.be.greaterThan(before.score.rawScore);
    const s = score.score;
    for (const d of Object.keys(DIMENSION_WEIGHTS) as Array<keyof typeof DIMENSION_WEIGHTS>)
      expect(Object.keys(s.components[d])).to.have.members(Object.keys(COMPONENTS[d]));
    // The seed's equations, on the figures of the document the bucket serves.
    assertPublishedScoreInvariants(score);
    expect(JSON.stringify(s.score)).to.match(/^\d+(\.\d{1,6})?$/);

    const { body: badge, res } = await published<string>(
      '/api/agents/doc-seller/badge.svg',
      (b) => b.includes('1.5 USDC'),
      (r) => r.text(),
    );
    expect(res.headers.get('content-type')).to.match(/^image\/svg\+xml/);
    expect(badge).to.match(/^<svg/);
    const { body: reputation } = await published<any[]>(
      '/api/agents/doc-seller/reputation.json',
      (r) => r.length === 1,
    );
    // The sale changed the seller's score and counts, so it comes back through the feed with them.
    const moved = await eventually(
      async () => {
        const p = await (await get(`/api/discovery/agents.json?limit=200&since=${encodeURIComponent(since)}`)).json();
        return p.items.find((i: any) => i.handle === 'doc-seller' && i.uniqueBuyers90d === 1);
      },
      10_000,
      100,
    );
    expect(moved.score).to.be.greaterThan(0);
    expect(reputation[0]).to.include({
      kind: 'NewFeedback',
      simulated: true,
      clientAddress: buyer.address,
      tag1: 'x402-purchase',
      tag2: post.id,
      amountAtomic: '1500000',
    });
  });

  it('the badge answers any kind and style; a bad kind is 400', async () => {
    const buyers = await (await get('/api/agents/doc-seller/badge.svg?kind=buyers&style=for-the-badge')).text();
    expect(buyers).to.contain('BUYERS 90D');
    const verified = await (await get('/api/agents/doc-seller/badge.svg?kind=verified')).text();
    expect(verified).to.contain('verified');
    const bad = await get('/api/agents/doc-seller/badge.svg?kind=fame');
    expect(bad.status).to.equal(400);
    expect((await bad.json()).invalidParams[0].name).to.equal('kind');
  });

  it('the embed card is safe in iframes: no script, escaped text, a CSP that allows framing', async () => {
    const { res, body } = await published<string>(
      '/api/agents/doc-seller/card',
      (b) => b.includes('Doc Seller'),
      (r) => r.text(),
    );
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy'))
      .to.contain('frame-ancestors *')
      .and.contain("default-src 'none'");
    expect(res.headers.get('x-frame-options')).to.equal(null);
    expect(body).to.not.match(/<script/i);
    expect(body).to.contain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(body).to.contain('&lt;b&gt;tables&lt;/b&gt;');
    // doc-seller's ERC-8004 token is owned by its wallet: the card shows the verified mark.
    expect(body).to.contain('✓ verified');
  });

  it('similar agents share tags and categories (IDF-weighted Jaccard)', async () => {
    const post = await (
      await lookalike.api('/api/posts', { method: 'POST', json: skill('Tables from PDFs', ['pdf', 'tables'], '0') })
    ).json();
    await lookalike.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    const { body } = await published<any>('/api/agents/doc-lookalike/similar.json', (s) => s.similar.length > 0);
    expect(body.method).to.equal('idf-jaccard');
    expect(body.similar[0].handle).to.equal('doc-seller');
    expect(body.similar[0].similarity).to.be.within(0, 1);
    expect(body.similar[0].shared).to.include('tag:pdf');
  });

  it("a degraded agent's published score document keeps the seed's equations exactly on its own figures", async () => {
    // doc-lookalike has one free skill, no contact and no documentation: degraded, multiplier 0.85.
    const { body: score } = await published<any>(
      '/api/agents/doc-lookalike/score.json',
      (d) => d.score.health.status === 'degraded',
    );
    expect(score.score.health.multiplier).to.equal(0.85);
    expect(score.score.rawScore).to.be.greaterThan(0);
    assertPublishedScoreInvariants(score);
    const { body: bp } = await published<any>('/api/agents/doc-lookalike/best-practices.json', (b) => b.passed > 0);
    assertCompletionPct(bp);
  });

  it('a recompute that changes nothing writes nothing; the daily full recompute queues every agent', async () => {
    const quiet = await registerAgent(svc, 'doc-quiet');
    await published<any>('/api/agents/doc-quiet/score.json');
    const { db } = svc.service.runtime.database;
    const counts = async () =>
      await db
        .selectFrom('published_documents')
        .select(['key', 'publish_count'])
        .where('key', 'like', 'api/agents/doc-quiet/%')
        .orderBy('key')
        .execute();
    const before = await counts();
    expect(before).to.have.length(10);
    const again = await agentDocumentsJob.run(jobContext(svc.service.runtime), { agentId: quiet.id });
    expect(again).to.include({ published: 0, unchanged: 11 });
    expect(await counts()).to.deep.equal(before);

    const agents = Number(
      (
        await db
          .selectFrom('agents')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(await recomputeAllJob.run(jobContext(svc.service.runtime), {})).to.include({ queued: agents });
  });

  it('time passing alone does not rewrite a score document, until it is a day old', async () => {
    // doc-seller has a sale, so its days-since figures and freshness components move every instant.
    const ctx = jobContext(svc.service.runtime);
    const { db } = svc.service.runtime.database;
    const scoreRow = () =>
      db
        .selectFrom('published_documents')
        .select(['publish_count', 'published_at'])
        .where('key', '=', 'api/agents/doc-seller/score.json')
        .executeTakeFirstOrThrow();
    const metricsAt = async () =>
      (
        await db
          .selectFrom('agent_metrics')
          .select('computed_at')
          .where('agent_id', '=', seller.id)
          .executeTakeFirstOrThrow()
      ).computed_at;
    // The full recompute the previous test queued moves similar lists, hence incoming-similar
    // counts, hence scores: let its pages finish first, so only time passes below.
    const documents = svc.service.runtime.queues.documents;
    await eventually(
      async () =>
        Object.values(await documents.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).every(
          (n) => n === 0,
        ),
      30_000,
      100,
    );
    await agentDocumentsJob.run(ctx, { agentId: seller.id });
    const before = await scoreRow();
    const metricsBefore = await metricsAt();
    const again = await agentDocumentsJob.run(ctx, { agentId: seller.id });
    expect(again).to.include({ published: 0, unchanged: 11 });
    expect((await scoreRow()).publish_count).to.equal(before.publish_count);
    expect(await metricsAt(), 'the metrics row follows the published document').to.deep.equal(metricsBefore);
    // The same content, published more than a day ago: republished with today's figures.
    await db
      .updateTable('published_documents')
      .set({ published_at: new Date(Date.now() - 25 * 3600_000) })
      .where('key', '=', 'api/agents/doc-seller/score.json')
      .execute();
    const refreshed = await agentDocumentsJob.run(ctx, { agentId: seller.id });
    expect(refreshed).to.include({ published: 1, unchanged: 10 });
    // (A background job for the same agent may have refreshed it at the same moment too.)
    expect((await scoreRow()).publish_count).to.be.at.least(before.publish_count + 1);
    const { body } = await published<any>(
      '/api/agents/doc-seller/score.json',
      (s) => Date.now() - Date.parse(s.computedAt) < 10_000,
    );
    expect(body.inputs.daysSinceLastSettle).to.be.a('number');
  });

  it('while a score document stands, the embed card, page and metrics row show it, not a score newer than it', async () => {
    const ctx = jobContext(svc.service.runtime);
    const { db } = svc.service.runtime.database;
    const deps = { db, site: svc.service.runtime.site, chain: ctx.chain, receipts: ctx.receipts };
    await agentDocumentsJob.run(ctx, { agentId: seller.id });
    const agent = await db.selectFrom('agents').selectAll().where('id', '=', seller.id).executeTakeFirstOrThrow();
    const stored = await db
      .selectFrom('agent_metrics')
      .select(['document', 'score'])
      .where('agent_id', '=', seller.id)
      .executeTakeFirstOrThrow();
    const { body: bucketScore } = await published<any>('/api/agents/doc-seller/score.json');
    expect(stored.document, 'the metrics row keeps the published score document').to.deep.equal(bucketScore);
    const key = (name: string) => `api/agents/doc-seller/${name}`;
    const render = async (at: Date, showPublishedScore: boolean) => {
      const [one] = await refreshAndRenderAgentDocumentsMany(deps, [agent], at, {
        skipUnchangedReputation: true,
        showPublishedScore,
      });
      return one!;
    };
    // 19 hours on, with no sale: the freshness components decayed, so a score computed now moves.
    const later = new Date(Date.now() + 19 * 3600_000);
    const current = await render(later, false);
    expect(current.score.score.score).to.be.below(bucketScore.score.score);
    const shown = await render(later, true);
    // Member for member, in the order the bucket copy has them (jsonb reorders what it stores).
    expect(JSON.stringify(shown.score), 'the standing document').to.equal(JSON.stringify(bucketScore));
    expect(shown.metrics.score).to.equal(bucketScore.score.score);
    const scoreInput = shown.documents.find((d) => d.key === key('score.json'))!;
    expect(scoreInput.refreshAfterMs, 'a standing document is not refreshed by this run').to.equal(undefined);
    const pageKey = agentPageDocument.key({ handle: 'doc-seller' });
    expect(shown.documents.map((d) => d.key)).to.include(pageKey);
    const outcomes = new Map((await publishDocuments(ctx, shown.documents)).map((r) => [r.key, r.outcome]));
    expect(outcomes.get(key('score.json'))).to.equal('unchanged');
    expect(outcomes.get(key('card')), 'the embed card shows the published score').to.equal('unchanged');
    expect(outcomes.get(pageKey), 'the page shows the published score').to.equal('unchanged');
    expect(outcomes.get(key('badge.svg'))).to.equal('unchanged');
    // Were it written (another job moved the bookkeeping meanwhile), it would be the same document.
    expect(JSON.parse(await (scoreInput.body as () => Promise<string>)())).to.deep.equal(bucketScore);
    // A metrics row that lost its copy: the document stands but is written again at once, with
    // the score computed now, which the card and the row then show too.
    await db.updateTable('agent_metrics').set({ document: null }).where('agent_id', '=', seller.id).execute();
    const copyless = await render(later, true);
    expect(copyless.score.computedAt).to.equal(later.toISOString());
    expect(copyless.documents.find((d) => d.key === key('score.json'))!.refreshAfterMs).to.equal(0);
    const rewritten = new Map((await publishDocuments(ctx, copyless.documents)).map((r) => [r.key, r.outcome]));
    expect(rewritten.get(key('score.json'))).to.equal('published');
    // Past its refresh it no longer stands: everything shows the score computed now.
    await db
      .updateTable('published_documents')
      .set({ published_at: new Date(Date.now() - 21 * 3600_000) })
      .where('key', '=', key('score.json'))
      .execute();
    const due = await render(later, true);
    expect(due.score.computedAt).to.equal(later.toISOString());
    expect(due.metrics.score).to.equal(current.score.score.score);
    expect(due.documents.find((d) => d.key === key('score.json'))!.refreshAfterMs).to.be.a('number');
  });

  it('a batch of agents renders exactly what each agent renders alone, and the batch job skips unknown ids', async () => {
    const ctx = jobContext(svc.service.runtime);
    const { db } = svc.service.runtime.database;
    const all = await db.selectFrom('agents').selectAll().orderBy('handle').execute();
    expect(all.length).to.be.at.least(3);
    const unknown = '00000000-0000-4000-8000-000000000000';
    const batch = await agentDocumentsBatchJob.run(ctx, { agentIds: [...all.map((a) => a.id), unknown] });
    expect(batch).to.include({ agents: all.length, missing: 1 });
    // Where the page's time went, for the dashboard and the bench.
    expect(Object.keys((batch as { timings: object }).timings)).to.have.members([
      'identityMs',
      'similarMs',
      'factsMs',
      'renderMs',
      'publishMs',
      'metricsMs',
    ]);
    expect(
      (batch as { published: number; unchanged: number }).published + (batch as { unchanged: number }).unchanged,
    ).to.equal(all.length * 11); // ten documents and the page
    // The same instant for both (scores decay with time): one statement set for all agents
    // renders byte for byte what one agent's own statements render.
    const deps = { db, site: svc.service.runtime.site, chain: ctx.chain, receipts: ctx.receipts };
    const now = new Date();
    const together = await refreshAndRenderAgentDocumentsMany(deps, all, now, { featuresFresh: true });
    const bytes = (docs: RenderedDocument[]) =>
      Promise.all(docs.map(async (d) => [d.key, typeof d.body === 'string' ? d.body : await d.body()]));
    for (const [i, agent] of all.entries()) {
      const alone = await refreshAndRenderAgentDocuments(deps, agent, now, { featuresFresh: true });
      expect(await bytes(together[i]!.documents)).to.deep.equal(await bytes(alone.documents));
      expect(together[i]!.metrics).to.deep.equal(alone.metrics);
    }
  });

  it('a reputation mirror is read only when its fingerprint moved, and read on demand if its copy changed meanwhile', async () => {
    const ctx = jobContext(svc.service.runtime);
    const { db } = svc.service.runtime.database;
    const deps = { db, site: svc.service.runtime.site, chain: ctx.chain, receipts: ctx.receipts };
    const key = 'api/agents/doc-seller/reputation.json';
    await agentDocumentsJob.run(ctx, { agentId: seller.id });
    const agent = await db.selectFrom('agents').selectAll().where('id', '=', seller.id).executeTakeFirstOrThrow();
    const eager = (await refreshAndRenderAgentDocuments(deps, agent)).documents.find((d) => d.key === key)!;
    expect(eager.body).to.be.a('string');
    expect(JSON.parse(eager.body as string)).to.have.length(1);
    // The receipt signed for the mirror is kept, and reused only for the same key, transaction and time.
    const [sale] = JSON.parse(eager.body as string);
    const paymentId = /\/api\/payments\/([^/]+)\/receipt$/.exec(sale.proofOfPayment.receiptUrl)![1]!;
    const kept = () =>
      db.selectFrom('payment_receipts').selectAll().where('payment_id', '=', paymentId).executeTakeFirstOrThrow();
    expect((await kept()).signature).to.equal(sale.proofOfPayment.receipt.signature);
    expect((await kept()).signer).to.equal(ctx.receipts.address.toLowerCase());
    await db
      .updateTable('payment_receipts')
      .set({ signer: `0x${'0'.repeat(40)}`, signature: '0x00' })
      .execute();
    const resigned = (await refreshAndRenderAgentDocuments(deps, agent)).documents.find((d) => d.key === key)!;
    expect(JSON.parse(resigned.body as string)[0].proofOfPayment.receipt.signature).to.equal(
      sale.proofOfPayment.receipt.signature,
    );
    expect((await kept()).signer, 'a signature of another key is replaced').to.equal(
      ctx.receipts.address.toLowerCase(),
    );
    const [lazy] = await refreshAndRenderAgentDocumentsMany(deps, [agent], new Date(), {
      skipUnchangedReputation: true,
    });
    const doc = lazy!.documents.find((d) => d.key === key)!;
    expect(doc.body, 'an unchanged mirror is not read').to.be.a('function');
    expect(doc.contentHash).to.equal(eager.contentHash);
    // Another worker published a different copy between the check and the write: read, then written.
    await db
      .updateTable('published_documents')
      .set({ content_hash: 'an older fingerprint' })
      .where('key', '=', key)
      .execute();
    expect((await publishDocuments(ctx, [doc]))[0]).to.include({ key, outcome: 'published' });
    const row = await db
      .selectFrom('published_documents')
      .select(['sha256', 'content_hash'])
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    expect(row).to.deep.equal({
      sha256: createHash('sha256')
        .update(eager.body as string)
        .digest('hex'),
      content_hash: eager.contentHash,
    });
  });

  it("the full recompute's pages leave alone an agent whose documents would come out as published, and no other", async () => {
    const ctx = jobContext(svc.service.runtime);
    const { db } = svc.service.runtime.database;
    const still = await registerAgent(svc, 'doc-still');
    const moved = await registerAgent(svc, 'doc-moved');
    // The registrations' own jobs first, so only what this test does writes documents.
    await eventually(drained, 30_000, 100);
    const page = [still.id, moved.id];
    const run = (deps = ctx) => recomputeAndPublishAgentDocuments(deps, page, { skipUnchanged: true });
    const publishCount = async (handle: string, name: AgentDocumentName) =>
      (
        await db
          .selectFrom('published_documents')
          .select('publish_count')
          .where('key', '=', agentDocumentKey(handle, name))
          .executeTakeFirstOrThrow()
      ).publish_count;

    // Whatever was left alone is current: rendering every document again writes none.
    const current = async () =>
      expect(await recomputeAndPublishAgentDocuments(ctx, page)).to.include({ leftAlone: 0, published: 0 });

    // Rendered once, which records what each agent's documents came from; then left alone.
    expect(await run()).to.include({ agents: 2, leftAlone: 0 });
    const left = await run();
    expect(left).to.include({ agents: 2, leftAlone: 2, published: 0, unchanged: 0 });
    // Its time for deciding (the scores for their identity, the digests) apart from the reads.
    expect(left.timings).to.include.keys('factsMs', 'decideMs');
    await current();
    // Something its documents show changes: that agent is rendered and its documents written.
    await db.updateTable('agents').set({ display_name: 'Moved Along' }).where('id', '=', moved.id).execute();
    const changed = await run();
    expect(changed).to.include({ leftAlone: 1 });
    expect(changed.published).to.be.greaterThan(0);
    expect(changed.rendered.map((r) => r.agent.handle)).to.deep.equal(['doc-moved']);
    expect(await run()).to.include({ leftAlone: 2 });
    await current();
    // A skill published (its card, page, score and checklist show it), by the API as a seller would.
    const cardWrites = await publishCount('doc-moved', 'agent-card.json');
    const post = await (
      await moved.api('/api/posts', { method: 'POST', json: skill('Moves along', ['moving'], '0') })
    ).json();
    await moved.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    // And a second one: the skills' digest decided on is that of several rows, in their order.
    const second = await (
      await moved.api('/api/posts', { method: 'POST', json: skill('Moves along again', ['moving'], '0') })
    ).json();
    await moved.api(`/api/posts/${second.id}/publish`, { method: 'POST' });
    // Its event's recompute of the seller's documents first (its card lists the skill).
    await eventually(async () => (await publishCount('doc-moved', 'agent-card.json')) > cardWrites, 30_000, 100);
    await eventually(drained, 30_000, 100);
    // The publish's own event already recomputed the seller's documents; the page renders it
    // once more, as its inputs moved, and finds nothing to write.
    const rows = await findPublishedSkills(db, [moved.id]);
    expect(rows.map((r) => r.title)).to.deep.equal(['Moves along again', 'Moves along']);
    expect(rows.map((r) => r.skills_digest)).to.deep.equal([rows[0]!.skills_digest, rows[0]!.skills_digest]);
    expect((await readPublishedSkillsDigests(db, [moved.id, still.id])).get(moved.id)).to.equal(rows[0]!.skills_digest);
    expect(await run()).to.include({ leftAlone: 1, published: 0 });
    expect(await run()).to.include({ leftAlone: 2 });
    await current();
    // A document written since by another path (an event's recompute): rendered, and put back.
    const cardKey = agentDocumentKey('doc-still', 'card');
    await db
      .updateTable('published_documents')
      .set({ content_hash: 'written-elsewhere' })
      .where('key', '=', cardKey)
      .execute();
    expect(await run()).to.include({ leftAlone: 1, published: 1 });
    expect(await run()).to.include({ leftAlone: 2 });
    await current();
    // The score document due for its daily refresh: rendered, and the score document written.
    const scoreWrites = await publishCount('doc-still', 'score.json');
    await db
      .updateTable('published_documents')
      .set({ published_at: sql<Date>`now() - interval '21 hours'` })
      .where('key', '=', agentDocumentKey('doc-still', 'score.json'))
      .execute();
    expect(await run()).to.include({ leftAlone: 1 });
    expect(await publishCount('doc-still', 'score.json')).to.equal(scoreWrites + 1);
    await current();
    // A published skill's title changed where no event follows (its digest is read in PostgreSQL):
    // its seller rendered, and its card, which lists the skill, written.
    const cardWritesBefore = await publishCount('doc-moved', 'agent-card.json');
    await db.updateTable('posts').set({ title: 'Moves along further' }).where('id', '=', post.id).execute();
    const retitled = await run();
    expect(retitled).to.include({ leftAlone: 1 });
    expect(retitled.rendered.map((r) => r.agent.handle)).to.deep.equal(['doc-moved']);
    expect(await publishCount('doc-moved', 'agent-card.json')).to.equal(cardWritesBefore + 1);
    expect(await run()).to.include({ leftAlone: 2 });
    await current();
    // The metrics row's copy of the score document no longer the one recorded: rendered, and the
    // score document written again at once, so the document and the row agree.
    const copyWrites = await publishCount('doc-still', 'score.json');
    await db
      .updateTable('agent_metrics')
      .set({ document: sql`document || '{"tampered": true}'::jsonb` })
      .where('agent_id', '=', still.id)
      .execute();
    expect(await run()).to.include({ leftAlone: 1 });
    expect(await publishCount('doc-still', 'score.json')).to.equal(copyWrites + 1);
    expect(await run()).to.include({ leftAlone: 2 });
    await current();
    // Another recompute wrote the metrics row between this page's save of it and its record: the
    // record keeps no copy, and the next page renders the agent.
    const state = await db
      .selectFrom('agent_render_states')
      .select(['inputs', 'documents', 'score_copy'])
      .where('agent_id', '=', still.id)
      .executeTakeFirstOrThrow();
    expect(state.score_copy).to.match(/^[0-9a-f]{32}$/);
    const { document } = await db
      .selectFrom('agent_metrics')
      .select('document')
      .where('agent_id', '=', still.id)
      .executeTakeFirstOrThrow();
    const record = (scoreCopy: string) => new Map([[still.id, { ...state, scoreCopy }]]);
    await saveRenderStates(db, record(JSON.stringify({ ...(document as object), written: 'by another page' })));
    expect(await run()).to.include({ leftAlone: 1 });
    await saveRenderStates(db, record(JSON.stringify(document)));
    expect(await run()).to.include({ leftAlone: 2 });
    await current();
    // What every document shares changes (the site's base URL; a deploy's code likewise): every agent rendered.
    const elsewhere = { ...ctx, site: { ...ctx.site, baseUrl: 'https://elsewhere.example' } };
    expect(await run(elsewhere)).to.include({ leftAlone: 0 });
    expect(await run(elsewhere)).to.include({ leftAlone: 2 });
    expect(await run()).to.include({ leftAlone: 0 });
    // A one-agent recompute (a domain event) never leaves an agent alone.
    expect(await recomputeAndPublishAgentDocuments(ctx, page)).to.include({ leftAlone: 0, published: 0 });
  });

  it('a render that read first and wrote last, over a later render of the same agent, has the agent written again; renders that only overlap do not', async () => {
    const base = jobContext(svc.service.runtime);
    const { db } = svc.service.runtime.database;
    const agent = await registerAgent(svc, 'doc-overtaken');
    await eventually(drained, 30_000, 100);
    const cardKey = agentDocumentKey(agent.handle, 'agent-card.json');
    const cardName = async () =>
      JSON.parse((await svc.service.runtime.store.get(cardKey))!.body.toString('utf8')).name as string;
    const rename = (name: string) =>
      db.updateTable('agents').set({ display_name: name }).where('id', '=', agent.id).execute();
    /** A gate: `reached` once something waits at it, and the waiter goes on after `open()`. */
    const gate = () => {
      let open!: () => void;
      let reached!: () => void;
      const opened = new Promise<void>((r) => (open = r));
      const at = new Promise<void>((r) => (reached = r));
      const pass = () => {
        reached();
        return opened;
      };
      return { open, reached: at, pass };
    };

    // The first render reads "First" and is held once it began writing, before its bucket writes.
    const puts = gate();
    await rename('First');
    const first = agentDocumentsJob.run(
      {
        ...base,
        store: {
          ...base.store,
          put: async (...a) => {
            await puts.pass();
            return base.store.put(...a);
          },
        },
      },
      { agentId: agent.id },
    );
    await puts.reached;
    // A second render, after a later change, writes "Second" meanwhile (its turn noted).
    await rename('Second');
    let secondTurn: number | undefined;
    const second = await agentDocumentsJob.run(
      {
        ...base,
        renderTurns: {
          ...base.renderTurns,
          take: async (ids) => {
            const turns = await base.renderTurns.take(ids);
            secondTurn = turns.get(agent.id);
            return turns;
          },
        },
      },
      { agentId: agent.id },
    );
    expect(second).to.not.have.property('writtenAgain');
    expect(await cardName()).to.equal('Second');
    // The first writes last: the bucket shows "First" until the job it queued, named after the
    // turn that overtook it, writes the agent again, whole.
    puts.open();
    expect(await first).to.include({ writtenAgain: 1 });
    expect(await cardName()).to.equal('First');
    const queued = await svc.service.runtime.queues.documents.getJob(`agent-documents-${agent.id}-after-${secondTurn}`);
    expect(queued?.data).to.deep.equal({ agentId: agent.id, rewrite: true });
    await eventually(async () => (await cardName()) === 'Second', 30_000, 50);
    await eventually(drained, 30_000, 100);
    expect(await cardName()).to.equal('Second');

    // Two renders that overlap, where the later one begins writing only after the earlier one is
    // done: the later one writes last, and neither queues anything.
    const earlierWrites = gate();
    const laterWrites = gate();
    const held = (g: ReturnType<typeof gate>) => ({
      ...base,
      renderTurns: {
        ...base.renderTurns,
        writing: async (t: ReadonlyMap<string, number>) => {
          await g.pass();
          return base.renderTurns.writing(t);
        },
      },
    });
    await rename('Third');
    const earlier = agentDocumentsJob.run(held(earlierWrites), { agentId: agent.id });
    await earlierWrites.reached;
    await rename('Fourth');
    const later = agentDocumentsJob.run(held(laterWrites), { agentId: agent.id });
    await laterWrites.reached;
    earlierWrites.open();
    expect(await earlier).to.not.have.property('writtenAgain');
    expect(await cardName()).to.equal('Third');
    laterWrites.open();
    expect(await later).to.not.have.property('writtenAgain');
    expect(await cardName()).to.equal('Fourth');
    expect(await svc.service.runtime.queues.documents.getJobCounts('waiting', 'delayed', 'active')).to.deep.equal({
      waiting: 0,
      delayed: 0,
      active: 0,
    });
    // What the job queued writes every document, though its bookkeeping says each is current: a
    // render overtaken mid-write may have left the bucket and the bookkeeping naming different bytes.
    const plain = (await agentDocumentsJob.run(base, { agentId: agent.id }))!;
    expect(plain).to.include({ published: 0 });
    const rewritten = (await agentDocumentsJob.run(base, { agentId: agent.id, rewrite: true }))!;
    expect(rewritten).to.include({ published: plain.unchanged as number, unchanged: 0 });
    expect(rewritten.published).to.be.greaterThan(5);
  });

  it("a renamed agent's handle reaches the similar lists holding it, and the full recompute's pages render their agents", async () => {
    const ctx = jobContext(svc.service.runtime);
    const { db } = svc.service.runtime.database;
    const renamed = await registerAgent(svc, 'sim-renamed');
    const lister = await registerAgent(svc, 'sim-lister');
    for (const [agent, title] of [
      [renamed, 'Renames things'],
      [lister, 'Renames things too'],
    ] as const) {
      const post = await (
        await agent.api('/api/posts', { method: 'POST', json: skill(title, ['renaming-shared'], '0') })
      ).json();
      await agent.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    }
    await eventually(drained, 30_000, 100);
    const page = [renamed.id, lister.id];
    // Ranked again now that both have their features (their events' jobs may have run in either
    // order), as the full recompute's similar pages rank before its document pages run.
    await recomputeAndStoreSimilar(db, page);
    // As the full recompute's document pages run: the lists stored by its similar pages before.
    const run = () => recomputeAndPublishAgentDocuments(ctx, page, { skipUnchanged: true, similarStored: true });
    const handlesListed = async () => (await readStoredSimilar(db, [lister.id])).get(lister.id)?.map((s) => s.handle);
    expect(await handlesListed()).to.include('sim-renamed');
    await run();
    expect(await run()).to.include({ leftAlone: 2 });
    // Renamed by an operator (handles have no API), with no event: the list holding it shows the new
    // handle, so the agent listing it is rendered too, and its similar list published with it.
    await db.updateTable('agents').set({ handle: 'sim-renamed-now' }).where('id', '=', renamed.id).execute();
    expect(await handlesListed())
      .to.include('sim-renamed-now')
      .and.not.include('sim-renamed');
    const after = await run();
    expect(after.rendered.map((r) => r.agent.handle).sort()).to.deep.equal(['sim-lister', 'sim-renamed-now']);
    const { body } = await published<any>('/api/agents/sim-lister/similar.json', (s) =>
      s.similar.some((e: { handle: string }) => e.handle === 'sim-renamed-now'),
    );
    expect(body.similar.map((e: { handle: string }) => e.handle)).to.not.include('sim-renamed');
    expect(await run()).to.include({ leftAlone: 2 });

    // The list written between the page's decision and its read of the lists it renders, and put
    // back after the page: what was rendered is not what was decided on, so it is not recorded and
    // the next page renders the agent again, though the list is back as decided.
    await db.updateTable('agents').set({ display_name: 'Lister' }).where('id', '=', lister.id).execute();
    const { similarity } = await db
      .selectFrom('agent_similar')
      .select('similarity')
      .where('agent_id', '=', lister.id)
      .where('rank', '=', 1)
      .executeTakeFirstOrThrow();
    const setSimilarity = (to: number) =>
      db
        .updateTable('agent_similar')
        .set({ similarity: to })
        .where('agent_id', '=', lister.id)
        .where('rank', '=', 1)
        .execute();
    const query = pg.Client.prototype.query;
    let written = false;
    pg.Client.prototype.query = function (this: pg.Client, text: unknown, ...rest: unknown[]) {
      const forward = () => (query as (...args: unknown[]) => unknown).call(this, text, ...rest);
      if (written || typeof text !== 'string' || !text.includes('l.line, md5(l.line)')) return forward();
      written = true;
      return setSimilarity(similarity / 2).then(forward);
    } as typeof query;
    try {
      expect((await run()).rendered.map((r) => r.agent.handle)).to.deep.equal(['sim-lister']);
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(written).to.equal(true);
    await setSimilarity(similarity);
    expect((await run()).rendered.map((r) => r.agent.handle)).to.deep.equal(['sim-lister']);
    expect(await run()).to.include({ leftAlone: 2 });
  });

  it("a sale's render of its seller reads the seller's purchases again, not its skills", async () => {
    await eventually(drained, 15_000, 100);
    const post = (await (await get('/api/agents/doc-seller/agent-card.json')).json()).skills[0];
    const before = (await published<any>('/api/agents/doc-seller/score.json')).body.inputs.settlementCount90d;
    const buyer = await newBuyer(chain());
    // Every statement the service sends while the sale settles and its documents jobs run.
    const { statements } = await captureStatements('', async () => {
      expect((await buyer.payV2(`${svc.url}/api/posts/${post.id}?view=full`)).status).to.equal(200);
      await published<any>('/api/agents/doc-seller/score.json', (s) => s.inputs.settlementCount90d === before + 1);
      await eventually(drained, 15_000, 100);
    });
    const aboutSeller = (marker: string) =>
      statements.filter((s) => s.text.includes(marker) && JSON.stringify(s.values).includes(seller.id)).length;
    expect(aboutSeller('repeat_buyers_90d'), "the seller's sales' aggregates").to.be.greaterThan(0);
    expect(aboutSeller('with_oasf'), "the seller's skills' counts").to.equal(0);
    expect(aboutSeller('count(DISTINCT c)'), "the seller's OASF categories").to.equal(0);
  });

  it('publishes the methodologies: 22 components and the ten checklist anchors', async () => {
    const score = await (await get('/spec/market-score-v1.json')).json();
    const names = Object.values(score.dimensions as Record<string, { components: object }>).flatMap((d) =>
      Object.keys(d.components),
    );
    expect(names).to.have.length(22);
    expect(score.weights).to.deep.equal({ transparency: 0.25, reliability: 0.3, reputation: 0.35, ecosystem: 0.1 });
    // Dimensions to 4 decimals, so contributions (whole-percent weights) are exact to 4 and score (x 0.85) to 6.
    expect(score.constants.decimals).to.include({ dimensions: 4, contributions: 4, rawScore: 4, score: 6 });
    expect(score.invariants).to.include(
      'contribution = dimension x weight x 100, exactly (at most decimals.contributions decimals)',
    );
    const bp = await (await get('/spec/best-practices-v1.json')).json();
    expect(bp.items.map((i: any) => i.anchor)).to.deep.equal([
      'profile-basics',
      'erc8004-identity',
      'payout-canonical',
      'capabilities',
      'oasf-taxonomy',
      'contact',
      'documentation',
      'monetized-skill',
      'recent-activity',
      'spec-conformant',
    ]);
  });
});
