import { expect } from 'chai';
import { verifyMessage } from 'viem';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { skillBody, skillName } from '../support/skills.js';

const skill = (title: string, priceAtomic: string) => ({
  title,
  preview: `${title}: what it does, in a sentence.`,
  priceAtomic,
  tags: ['crawl'],
  body: skillBody(skillName(title), `# ${title}`),
});

describe('crawler discovery: probes get the 402, /.well-known/x402 lists paid resources with ownership proofs', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let quiet: Agent;
  let origin: string;
  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);

  const draft = async (author: Agent, title: string, priceAtomic: string) =>
    (await (await author.api('/api/posts', { method: 'POST', json: skill(title, priceAtomic) })).json()).id as string;
  const publish = (author: Agent, id: string, json?: unknown) =>
    author.api(`/api/posts/${id}/publish`, { method: 'POST', ...(json === undefined ? {} : { json }) });

  before(async () => {
    svc = await startTestService();
    origin = new URL(svc.service.runtime.site.baseUrl).origin;
    seller = await registerAgent(svc, 'proving-seller');
    quiet = await registerAgent(svc, 'quiet-seller');
  });
  after(async () => svc?.stop());

  describe('a paid route answers an unpaid probe with its 402, whatever else is wrong', () => {
    it('an empty POST to /api/agents/verify gets the registration 402: 1 USDC to the treasury', async () => {
      const res = await get('/api/agents/verify', { method: 'POST' });
      expect(res.status).to.equal(402);
      const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
      expect(required.accepts[0]).to.include({
        amount: '1000000',
        payTo: svc.service.runtime.chain.treasury,
        network: svc.service.runtime.chain.network,
      });
      expect(required.resource.url).to.equal(`${svc.service.runtime.site.baseUrl}/api/agents/verify`);
      const body = await res.json();
      expect(body).to.include({ x402Version: 1, status: 402, code: 'payment_required' });
      expect(body.accepts[0]).to.include({ maxAmountRequired: '1000000' });
    });

    it('so do an empty JSON object and a body that is not JSON', async () => {
      const json = await get('/api/agents/verify', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(json.status).to.equal(402);
      const text = await get('/api/agents/verify', {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'hello',
      });
      expect(text.status).to.equal(402);
    });

    it('a request that carries a payment keeps its 400 for a bad body', async () => {
      for (const header of ['X-PAYMENT', 'PAYMENT-SIGNATURE', 'SIGN-IN-WITH-X']) {
        const res = await get('/api/agents/verify', {
          method: 'POST',
          headers: { 'content-type': 'application/json', [header]: 'e30=' },
          body: '{}',
        });
        expect(res.status, header).to.equal(400);
        expect((await res.json()).code, header).to.equal('invalid_request');
      }
    });

    it('a valid login without payment still logs in', async () => {
      const res = await postVerify(svc.url, await signedVerifyBody(svc.url, seller.account));
      expect(res.status).to.equal(200);
      expect(await res.json()).to.include({ action: 'login' });
    });

    it('an unknown view is a 400 naming view and its values, paid skill or not; the advertised view=full URL gets the 402', async () => {
      const paid = await draft(seller, 'Probed skill', '1500000');
      expect((await publish(seller, paid)).status).to.equal(200);
      const free = await draft(seller, 'Free probed skill', '0');
      await publish(seller, free);
      const unknownPost = '00000000-0000-4000-8000-000000000000';
      for (const path of [
        `/api/posts/${paid}?view=bogus`,
        `/api/posts/${paid}?view=everything`,
        `/api/posts/${paid}?view=full&view=preview`,
        `/api/posts/${free}?view=bogus`,
        `/api/posts/${unknownPost}?view=bogus`,
      ]) {
        const res = await get(path);
        expect(res.status, path).to.equal(400);
        expect(res.headers.get('content-type'), path).to.match(/^application\/problem\+json/);
        expect(res.headers.get('payment-required'), path).to.equal(null);
        const problem = await res.json();
        expect(problem, path).to.include({ status: 400, code: 'invalid_request' });
        expect(problem.invalidParams, path).to.have.length(1);
        expect(problem.invalidParams[0], path).to.include({ name: 'view', in: 'query' });
        expect(problem.invalidParams[0].reason, path).to.include('"preview"').and.include('"full"');
      }
      // A payment header changes nothing: the view is still unknown.
      expect((await get(`/api/posts/${paid}?view=bogus`, { headers: { 'X-PAYMENT': 'e30=' } })).status).to.equal(400);

      // What crawlers probe: the resource URL /.well-known/x402 advertises.
      const advertised = `${svc.service.runtime.site.baseUrl}/api/posts/${paid}?view=full`;
      // Listed once the Bazaar projection has taken the skill up (docs/projections.md).
      await eventually(
        async () => (await (await get('/.well-known/x402')).json()).resources.includes(advertised),
        30_000,
        100,
      );
      const probe = await get(`/api/posts/${paid}?view=full`);
      expect(probe.status).to.equal(402);
      const required = decodePaymentRequiredHeader(probe.headers.get('payment-required')!);
      expect(required.accepts[0]).to.include({ amount: '1500000', payTo: seller.address });
      expect(required.resource.url).to.equal(advertised);
      expect((await get(`/api/posts/${paid}`)).status, 'the preview stays free').to.equal(200);
      expect((await get(`/api/posts/${unknownPost}?view=full`)).status).to.equal(404);
    });
  });

  describe('/.well-known/x402', () => {
    let proven: string;
    let unproven: string;
    let draftOnly: string;

    before(async () => {
      proven = await draft(seller, 'Skill with a proven seller', '2000000');
      const ownershipProof = await seller.account.signMessage({ message: origin });
      const res = await publish(seller, proven, { ownershipProof });
      expect(res.status).to.equal(200);
      unproven = await draft(quiet, 'Skill of a seller who proved nothing', '3000000');
      expect((await publish(quiet, unproven)).status).to.equal(200);
      draftOnly = await draft(quiet, 'Unpublished skill', '3000000');
    });

    it('lists registration and the paid published skills by absolute URL, CORS-open and cacheable', async () => {
      const base = svc.service.runtime.site.baseUrl;
      // Listed once the Bazaar projection has taken the skills up (docs/projections.md).
      await eventually(
        async () =>
          ((await (await get('/.well-known/x402')).json()).resources as string[]).includes(
            `${base}/api/posts/${unproven}?view=full`,
          ),
        30_000,
        100,
      );
      const res = await get('/.well-known/x402');
      expect(res.status).to.equal(200);
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      expect(res.headers.get('cache-control')).to.match(/public, max-age=\d+/);
      expect(res.headers.get('etag')).to.be.a('string');
      const doc = await res.json();
      expect(doc.version).to.equal(1);
      expect(doc.resources[0]).to.equal(`${base}/api/agents/verify`);
      expect(doc.resources).to.include.members([
        `${base}/api/posts/${proven}?view=full`,
        `${base}/api/posts/${unproven}?view=full`,
      ]);
      expect(doc.resources).to.not.include(`${base}/api/posts/${draftOnly}?view=full`);
    });

    it("carries the treasury's proof and the proving seller's, each the origin signed by a wallet paid", async () => {
      const doc = await (await get('/.well-known/x402')).json();
      const signers = async (address: `0x${string}`) =>
        (
          await Promise.all(
            doc.ownershipProofs.map((signature: `0x${string}`) =>
              verifyMessage({ address, message: origin, signature }),
            ),
          )
        ).filter(Boolean).length;
      expect(await signers(svc.service.runtime.chain.treasury), 'the treasury').to.equal(1);
      expect(await signers(seller.address), 'the seller who proved').to.equal(1);
      expect(await signers(quiet.address), 'the seller who did not').to.equal(0);
      expect(doc.ownershipProofs).to.have.length(2);
      // The OpenAPI document, which crawlers read first, carries the same proofs.
      const openapi = await (await get('/openapi.json')).json();
      expect(openapi['x-discovery'].ownershipProofs).to.have.members(doc.ownershipProofs);
    });

    it('publishes the receipt signing key, the same the site AgentCard names', async () => {
      const doc = await (await get('/.well-known/x402')).json();
      const card = await (await get('/.well-known/agent-card.json')).json();
      const entry = card.capabilities.extensions.find((e: { params: { kid?: string } }) => e.params.kid);
      expect(doc.receiptSigner).to.deep.equal({
        address: svc.service.runtime.receipts.address,
        kid: svc.service.runtime.receipts.kid,
        format: 'eip712',
      });
      expect(entry.params).to.include({ address: doc.receiptSigner.address, kid: doc.receiptSigner.kid });
    });

    it('a proof that is not the origin signed by the seller gets 422 ownership_proof_invalid and nothing is published', async () => {
      const id = await draft(quiet, 'Skill with a borrowed proof', '1000000');
      const wrong = [
        await seller.account.signMessage({ message: origin }), // another wallet's
        await quiet.account.signMessage({ message: 'https://elsewhere.example' }), // another origin
        await quiet.account.signMessage({ message: `${origin}/` }), // not the origin as crawlers sign it
      ];
      for (const ownershipProof of wrong) {
        const res = await publish(quiet, id, { ownershipProof });
        expect(res.status).to.equal(422);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect((await res.json()).code).to.equal('ownership_proof_invalid');
      }
      expect((await quiet.api(`/api/posts/${id}`)).status).to.equal(200);
      expect((await get(`/api/posts/${id}`)).status, 'still a draft').to.equal(404);
      const malformed = await publish(quiet, id, { ownershipProof: 'not-hex' });
      expect(malformed.status).to.equal(400);
      expect((await publish(quiet, id, { proof: '0x' })).status, 'unknown members').to.equal(400);
    });

    it("a seller's later proof is listed from then on", async () => {
      const id = await draft(quiet, 'Second skill of the quiet seller', '1000000');
      const res = await publish(quiet, id, { ownershipProof: await quiet.account.signMessage({ message: origin }) });
      expect(res.status).to.equal(200);
      const doc = await (await get('/.well-known/x402')).json();
      const verified = await Promise.all(
        doc.ownershipProofs.map((signature: `0x${string}`) =>
          verifyMessage({ address: quiet.address, message: origin, signature }),
        ),
      );
      expect(verified.filter(Boolean)).to.have.length(1);
      expect(doc.ownershipProofs).to.have.length(3);
    });
  });
});
