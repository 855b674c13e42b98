import { expect } from 'chai';
import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import { createWalletClient, hashTypedData, http, keccak256, verifyTypedData, type Address, type Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { mintIdentity } from '../../src/cli/erc8004-identity.js';
import { REGISTRATION_TYPE } from '../../src/domain/identity/erc8004.js';
import { reviewTypedData, revocationTypedData, type ReviewMessage } from '../../src/domain/reviews/review-terms.js';
import { giveFeedbackArgs } from '@skill-market/skill-protocol/review-typed-data';
import { localChain } from '../../src/platform/chain/clients.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { eventually, settledPayment, startTestService, type TestService } from '../support/service.js';
import { skillMd } from '../support/skills.js';

const PRICE = 1_000_000n;
type FeedbackArgs = readonly [bigint, bigint, number, string, string, string, string, Hex];
const now = () => Math.floor(Date.now() / 1000);

interface ReviewsDoc {
  rating: { count: number; mean: number | null; adjusted: number | null; distribution: Record<string, number> };
  reviews: Array<{
    buyer: string;
    rating: number;
    revision: number;
    text: string;
    onChain: { status: string; txHash: string | null };
    response: { text: string } | null;
    feedbackURI: string;
    feedbackHash: string;
  }>;
}

describe('reviews: verified buyers, on chain as ERC-8004 specifies', function () {
  this.timeout(180_000);
  let svc: TestService;
  let seller: Agent;
  let buyer: Agent;
  let outsider: Agent;
  let postId: string;
  let paymentId: string;
  let purchaseTx: string;
  let agentId: bigint;
  /** The buyer's giveFeedback arguments, as anyone reads them on chain. */
  let ownArgs: FeedbackArgs;

  const chain = () => svc.service.runtime.chain;
  const reviews = async (): Promise<ReviewsDoc> => (await fetch(`${svc.url}/api/posts/${postId}/reviews.json`)).json();
  const message = (over: Partial<ReviewMessage> = {}): ReviewMessage => ({
    paymentId,
    transaction: purchaseTx,
    postId,
    version: 1,
    rating: 4,
    text: 'Clear instructions; the tide tables were right for Brest.',
    issuedAt: now(),
    ...over,
  });
  const sign = (account: PrivateKeyAccount, m: ReviewMessage) =>
    account.signTypedData(reviewTypedData(chain().chainId, m));
  const post = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    fetch(`${svc.url}/api/posts/${postId}/reviews`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const body = (m: ReviewMessage, signature?: Hex) => ({
    paymentId: m.paymentId,
    rating: m.rating,
    text: m.text,
    issuedAt: m.issuedAt,
    ...(signature ? { signature } : {}),
  });
  const wallet = (account: PrivateKeyAccount) =>
    createWalletClient({
      account,
      chain: localChain(chain().chainId, chain().rpcUrl),
      transport: http(chain().rpcUrl),
    });
  const rpc = (method: string, params: unknown[] = []) =>
    chain().publicClient.request({ method, params } as never) as Promise<unknown>;
  async function giveFeedback(
    account: PrivateKeyAccount,
    args: readonly [bigint, bigint, number, string, string, string, string, Hex],
  ) {
    const hash = await wallet(account).writeContract({
      address: chain().reputationRegistry as Address,
      abi: REPUTATION_REGISTRY_ABI,
      functionName: 'giveFeedback',
      args,
    });
    await chain().publicClient.waitForTransactionReceipt({ hash });
    return hash;
  }

  before(async () => {
    svc = await startTestService();
    [seller, buyer, outsider] = await Promise.all([
      registerAgent(svc, 'tide-maker'),
      registerAgent(svc, 'tide-reader'),
      registerAgent(svc, 'tide-passerby'),
    ]);
    const c = chain();
    const minted = await mintIdentity(
      seller.account,
      { rpcUrl: c.rpcUrl, chainId: c.chainId, identityRegistry: c.identityRegistry },
      () => ({ type: REGISTRATION_TYPE, name: 'tide-maker' }),
    );
    agentId = minted.agentId;
    const patched = await seller.api('/api/agents/me', {
      method: 'PATCH',
      json: { erc8004AgentId: agentId.toString() },
    });
    expect(patched.status, await patched.clone().text()).to.equal(200);
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Tide tables',
        preview: 'Reads tide tables.',
        priceAtomic: PRICE.toString(),
        body: { files: [{ path: 'SKILL.md', content: skillMd('tide-tables', { body: '# Tide tables\n' }) }] },
      },
    });
    postId = (await created.json()).id;
    expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST', json: {} })).status).to.equal(200);
    const bought = await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`);
    expect(bought.status).to.equal(200);
    paymentId = bought.headers.get('x-payment-id') as string;
    purchaseTx = (await settledPayment(svc.url, paymentId)).txHash;
  });

  after(() => svc?.stop());

  it('refuses, with a code and nothing written, what is not a verified buyer’s fresh review', async () => {
    const refused = async (res: Response, status: number, code: string) => {
      expect(res.status).to.equal(status);
      expect((await res.json()).code).to.equal(code);
    };
    const m = message();
    await refused(await post(body(m, await sign(outsider.account, m))), 403, 'not_buyer');
    await refused(await post(body(m, `0x${'00'.repeat(65)}`)), 401, 'signature_invalid');
    await refused(await post(body(m)), 401, 'signature_missing');
    const old = message({ issuedAt: now() - 3600 });
    await refused(await post(body(old, await sign(buyer.account, old))), 401, 'signature_expired');
    const long = message({ text: 'x'.repeat(2001) });
    expect((await post(body(long, await sign(buyer.account, long)))).status).to.equal(400);
    const control = message({ text: 'fine\u0007bell' });
    expect((await post(body(control, await sign(buyer.account, control)))).status).to.equal(400);
    const unknown = message({ paymentId: '00000000-0000-4000-8000-000000000000' });
    await refused(await post(body(unknown, await sign(buyer.account, unknown))), 404, 'purchase_not_found');

    // The seller buys its own skill: that purchase carries no review.
    const own = await seller.payV2(`${svc.url}/api/posts/${postId}?view=full`);
    if (own.status === 200 && own.headers.get('x-payment-id')) {
      const ownId = own.headers.get('x-payment-id') as string;
      const ownTx = (await settledPayment(svc.url, ownId)).txHash;
      const mine = message({ paymentId: ownId, transaction: ownTx });
      await refused(await post(body(mine, await sign(seller.account, mine))), 403, 'own_skill_review');
    }
    expect((await reviews()).reviews).to.have.length(0);
  });

  it('a buyer reviews on chain; the follower verifies it within seconds; it shows in reviews.json, the rating and the page', async () => {
    const m = message();
    const signature = await sign(buyer.account, m);
    const res = await post(body(m, signature));
    expect(res.status, await res.clone().text()).to.equal(201);
    const written = await res.json();
    expect(written.signedBy).to.equal('buyer');
    expect(
      await verifyTypedData({ address: buyer.address, ...reviewTypedData(chain().chainId, m), signature }),
    ).to.equal(true);
    const replay = await post(body(m, signature));
    expect(replay.status).to.equal(409);
    expect((await replay.json()).code).to.equal('signature_replayed');
    // The same signature in another encoding is the same signature: v as 0/1, or the high-s twin.
    const v = Number.parseInt(signature.slice(130), 16);
    const lowV = `${signature.slice(0, 130)}0${v - 27}` as Hex;
    const again = await post(body(m, lowV));
    expect((await again.json()).code).to.equal('signature_replayed');
    const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const highS = (N - BigInt(`0x${signature.slice(66, 130)}`)).toString(16).padStart(64, '0');
    const twin = `${signature.slice(0, 66)}${highS}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
    const malleable = await post(body(m, twin));
    expect(malleable.status).to.equal(401);
    expect((await malleable.json()).code).to.equal('signature_invalid');

    // The feedback file: its keccak-256 is the hash given on chain, and every signature in it checks.
    const fileRes = await fetch(written.feedbackURI);
    const bytes = new Uint8Array(await fileRes.arrayBuffer());
    expect(keccak256(bytes)).to.equal(written.feedbackHash);
    const file = JSON.parse(new TextDecoder().decode(bytes));
    expect(file.proofOfPayment).to.deep.equal({
      fromAddress: buyer.address,
      toAddress: seller.address,
      chainId: chain().chainId,
      txHash: purchaseTx,
    });
    expect(file.agentId).to.equal(Number(agentId));
    const signer = svc.service.runtime.receipts.address;
    expect(
      await verifyTypedData({
        address: signer,
        domain: file.skillMarket.attestation.eip712.domain,
        types: {
          VerifiedReview: [
            { name: 'review', type: 'bytes32' },
            { name: 'paymentId', type: 'string' },
            { name: 'purchaseTransaction', type: 'string' },
            { name: 'buyer', type: 'address' },
          ],
        },
        primaryType: 'VerifiedReview',
        message: {
          review: hashTypedData(reviewTypedData(chain().chainId, m)),
          paymentId,
          purchaseTransaction: purchaseTx,
          buyer: buyer.address,
        },
        signature: file.skillMarket.attestation.signature,
      }),
    ).to.equal(true);

    const o = written.onChain;
    expect(o.agentId).to.equal(agentId.toString());
    ownArgs = giveFeedbackArgs(o);
    const chainTx = await giveFeedback(buyer.account, ownArgs);
    const doc = await eventually(async () => {
      const d = await reviews();
      return d.reviews[0]?.onChain.status === 'verified' ? d : undefined;
    }, 15_000);
    expect(doc.reviews[0]?.onChain.txHash).to.equal(chainTx);
    expect(doc.rating).to.include({ count: 1, mean: 4 });
    expect(doc.rating.distribution['4']).to.equal(1);
    const preview = await (await fetch(`${svc.url}/api/posts/${postId}`)).json();
    expect(preview.rating).to.include({ count: 1, mean: 4 });
    const page = await eventually(async () => {
      const html = await (await fetch(`${svc.url}/skills/${postId}`)).text();
      return html.includes('Clear instructions') ? html : undefined;
    }, 15_000);
    expect(page).to.include('verified buyer');

    // The seller's reputation mirror carries the review and the verified on-chain feedback; its rating summary counts it.
    const mirror = await eventually(async () => {
      const events = await (await fetch(`${svc.url}/api/agents/tide-maker/reputation.json`)).json();
      return Array.isArray(events) && events.some((e) => e.kind === 'NewFeedback' && !e.simulated) ? events : undefined;
    }, 15_000);
    const feedback = mirror.find((e: { kind: string; simulated: boolean }) => e.kind === 'NewFeedback' && !e.simulated);
    expect(feedback.details).to.include({ verification: 'verified', txHash: chainTx, revoked: false });
    expect(mirror.some((e: { kind: string }) => e.kind === 'Review')).to.equal(true);
    expect(mirror.some((e: { kind: string; simulated: boolean }) => e.kind === 'NewFeedback' && e.simulated)).to.equal(
      true,
    );
    const summary = await eventually(async () => {
      const r = await (await fetch(`${svc.url}/api/agents/tide-maker/rating.json`)).json();
      return r.rating?.count === 1 ? r : undefined;
    }, 15_000);
    expect(summary.rating).to.include({ mean: 4 });
    expect(summary.refunds).to.include({ refunds: 0, refundRate: 0 });
    const agentPage = await eventually(async () => {
      const html = await (await fetch(`${svc.url}/agents/tide-maker`)).text();
      return html.includes('from 1 verified buyer review') ? html : undefined;
    }, 15_000);
    expect(agentPage).to.include('0 refunds of');

    // Search ranks by it (sort=rating) and the badge draws it (kind=rating).
    const found = await eventually(async () => {
      const r = await (await fetch(`${svc.url}/api/discovery/search?q=tide&type=posts&sort=rating`)).json();
      return r.results?.find((h: { id: string }) => h.id === postId);
    }, 15_000);
    expect(found.rating).to.include({ count: 1, mean: 4 });
    expect(found.rating.adjusted).to.be.a('number').within(1, 5);
    const badge = await (await fetch(`${svc.url}/api/agents/tide-maker/badge.svg?kind=rating`)).text();
    expect(badge).to.include('4.0/5 (1 verified)');
    expect((await fetch(`${svc.url}/api/discovery/search?q=tide&sort=stars`)).status).to.equal(400);
  });

  it('feedback by anyone else never counts: a copy of the buyer’s, revoked by its giver, and malformed events change nothing', async () => {
    const mirror = async () => (await fetch(`${svc.url}/api/agents/tide-maker/reputation.json`)).json();
    const event = (tx: string) => async () =>
      (await mirror()).find((e: { details?: { txHash?: string } }) => e.details?.txHash === tx);
    // The outsider copies the buyer's giveFeedback arguments (public on chain), then revokes its copy.
    const copy = await giveFeedback(outsider.account, ownArgs);
    const copied = await eventually(event(copy), 15_000);
    expect(copied.details).to.include({ verification: 'unverified', reason: 'client_not_buyer' });
    const copyIndex = (await chain().publicClient.readContract({
      address: chain().reputationRegistry as Address,
      abi: REPUTATION_REGISTRY_ABI,
      functionName: 'getLastIndex',
      args: [agentId, outsider.address],
    })) as bigint;
    const revokeCopy = await wallet(outsider.account).writeContract({
      address: chain().reputationRegistry as Address,
      abi: REPUTATION_REGISTRY_ABI,
      functionName: 'revokeFeedback',
      args: [agentId, copyIndex],
    });
    await chain().publicClient.waitForTransactionReceipt({ hash: revokeCopy });
    await eventually(async () => ((await event(copy)())?.details?.revoked ? true : undefined), 15_000);
    // A NUL in a tag cannot be stored: the event is kept as malformed, and the follower goes on.
    const odd = await giveFeedback(outsider.account, [
      agentId,
      100n,
      0,
      'star\u0000red',
      'x',
      '',
      'u',
      `0x${'42'.repeat(32)}`,
    ]);
    const malformed = await eventually(event(odd), 15_000);
    expect(malformed.details).to.include({ verification: 'unverified', reason: 'malformed_feedback', tag1: 'starred' });
    const preview = await (await fetch(`${svc.url}/api/posts/${postId}`)).json();
    expect(preview.rating).to.include({ count: 1, mean: 4 });
    expect((await reviews()).reviews[0]?.onChain.status).to.equal('verified');
  });

  it('a non-buyer’s on-chain feedback is shown as unverified and never counted; a reorg un-indexes it', async () => {
    const made = `0x${'77'.repeat(32)}` as Hex;
    const snapshot = await rpc('evm_snapshot');
    const tx = await giveFeedback(outsider.account, [
      agentId,
      100n,
      0,
      'starred',
      'skill-review',
      '',
      'https://elsewhere.example/f.json',
      made,
    ]);
    const mirrored = await eventually(async () => {
      const events = await (await fetch(`${svc.url}/api/agents/tide-maker/reputation.json`)).json();
      return events.find((e: { details?: { txHash?: string } }) => e.details?.txHash === tx);
    }, 15_000);
    expect(mirrored).to.include({ kind: 'NewFeedback', simulated: false, clientAddress: outsider.address });
    expect(mirrored.details).to.include({ verification: 'unverified', reason: 'unknown_feedback_file' });
    const preview = await (await fetch(`${svc.url}/api/posts/${postId}`)).json();
    expect(preview.rating.count, 'unverified feedback is never counted').to.equal(1);

    await rpc('evm_revert', [snapshot]);
    await rpc('anvil_mine', ['0x3']);
    await eventually(async () => {
      const events = await (await fetch(`${svc.url}/api/agents/tide-maker/reputation.json`)).json();
      return events.every((e: { details?: { txHash?: string } }) => e.details?.txHash !== tx) ? true : undefined;
    }, 15_000);
  });

  it('the seller responds once; an edit is a new revision; a revoked review leaves the rating', async () => {
    const buyerAddress = buyer.address;
    const respond = (who: Agent, text: string) =>
      who.api(`/api/posts/${postId}/reviews/${buyerAddress}/response`, { method: 'POST', json: { text } });
    expect((await respond(buyer, 'me too')).status).to.equal(403);
    expect((await respond(seller, 'Thanks, Brest is our best port.')).status).to.equal(201);
    const again = await respond(seller, 'Again');
    expect(again.status).to.equal(409);
    expect((await again.json()).code).to.equal('response_exists');

    const edit = message({ rating: 2, text: 'The Saint-Malo table was a day off.', issuedAt: now() + 1 });
    const edited = await post(body(edit, await sign(buyer.account, edit)));
    expect(edited.status).to.equal(201);
    expect((await edited.json()).revision).to.equal(2);
    // reviews.json is a published document: the embedded CDN serves the new one once the worker has published it.
    let doc = await eventually(async () => {
      const d = await reviews();
      return d.reviews[0]?.revision === 2 && d.reviews[0].response ? d : undefined;
    }, 15_000);
    expect(doc.reviews).to.have.length(1);
    expect(doc.reviews[0]).to.include({ rating: 2, revision: 2 });
    expect(doc.reviews[0]?.response?.text).to.equal('Thanks, Brest is our best port.');
    expect(doc.rating).to.include({ count: 1, mean: 2 });

    const issuedAt = now() + 2;
    const revocation = await buyer.account.signTypedData(
      revocationTypedData(chain().chainId, { postId, paymentId, issuedAt }),
    );
    const revoked = await fetch(`${svc.url}/api/posts/${postId}/reviews/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ paymentId, issuedAt, signature: revocation }),
    });
    expect(revoked.status, await revoked.clone().text()).to.equal(200);
    doc = await eventually(async () => {
      const d = await reviews();
      return d.reviews.length === 0 ? d : undefined;
    }, 15_000);
    expect(doc.reviews).to.have.length(0);
    expect(doc.rating.count).to.equal(0);
    expect(doc.rating.mean).to.equal(null);
  });
});
