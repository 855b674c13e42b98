import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { SettleResponse } from '@x402/core/types';
import type { Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { refundRequestTypedData } from '../../src/domain/refunds/refund-typed-data.js';
import { reviewTypedData, revocationTypedData, type ReviewMessage } from '../../src/domain/reviews/review-terms.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { balanceOf, signAuthorization, wire, x402Payer } from '../support/buyers.js';
import { buyOverMcp, callTool, connectMcp, toolErrorCode } from '../support/mcp.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { publishSignedSkill } from '../support/skills.js';

const PRICE = 1_000_000n;
const now = () => Math.floor(Date.now() / 1000);

interface ReviewsDoc {
  rating: { count: number; mean: number | null };
  reviews: Array<{ buyer: string; rating: number; text: string; response: { text: string } | null }>;
}

describe('MCP tools for reviews and refunds: the buyer signs with its wallet, the seller uses its token', function () {
  this.timeout(180_000);
  let svc: TestService;
  let seller: Agent;
  let buyer: Agent;
  let outsider: Agent;
  let postId: string;
  let paymentId: string;
  let purchaseTx: string;
  let version: number;
  /** A client with no agent token: what it states, it signs with the buyer's wallet. */
  let anonymous: Client;
  let asSeller: Client;
  let asBuyer: Client;
  let asOutsider: Client;

  const chain = () => svc.service.runtime.chain;
  const structured = <T>(result: CallToolResult) => {
    expect(result.isError, JSON.stringify(result.content)).to.not.equal(true);
    return result.structuredContent as T;
  };
  const message = (over: Partial<ReviewMessage> = {}): ReviewMessage => ({
    paymentId,
    transaction: purchaseTx,
    postId,
    version,
    rating: 4,
    text: 'Reads the harbour charts of Brest right.',
    issuedAt: now(),
    ...over,
  });
  const signReview = (account: PrivateKeyAccount, m: ReviewMessage) =>
    account.signTypedData(reviewTypedData(chain().chainId, m));
  const reviewArgs = (m: ReviewMessage, signature?: Hex) => ({
    postId: m.postId,
    paymentId: m.paymentId,
    rating: m.rating,
    text: m.text,
    issuedAt: m.issuedAt,
    ...(signature ? { signature } : {}),
  });
  const reviewsOf = async (client: Client) =>
    structured<ReviewsDoc>(await callTool(client, 'get_skill_reviews', { postId }));
  /** The buying wallet's EIP-712 RefundRequest, as an MCP client holding the key signs it. */
  async function signRefundRequest(account: PrivateKeyAccount, reason: string, text: string, at = new Date()) {
    const signature = await account.signTypedData({
      ...refundRequestTypedData(chain().chainId),
      message: { paymentId, reason, text, issuedAt: BigInt(Math.floor(at.getTime() / 1000)) },
    });
    return { paymentId, reason, text, issuedAt: at.toISOString(), signature };
  }

  before(async () => {
    svc = await startTestService();
    [seller, buyer, outsider] = await Promise.all([
      registerAgent(svc, 'chart-maker'),
      registerAgent(svc, 'chart-reader'),
      registerAgent(svc, 'chart-passerby'),
    ]);
    postId = await publishSignedSkill(seller, {
      title: 'Harbour charts',
      preview: 'Reads harbour charts.',
      priceAtomic: PRICE.toString(),
      tags: ['charts'],
      skill: 'harbour-charts',
    });
    [anonymous, asSeller, asBuyer, asOutsider] = await Promise.all([
      connectMcp(svc.url),
      connectMcp(svc.url, seller.token),
      connectMcp(svc.url, buyer.token),
      connectMcp(svc.url, outsider.token),
    ]);
    // Bought over MCP by a client with the buyer's wallet and no account.
    const bought = await buyOverMcp(anonymous, x402Payer(chain(), buyer.account), postId);
    const delivered = structured<{ paymentId: string; integrity: { version: number } }>(bought.result);
    paymentId = delivered.paymentId;
    version = delivered.integrity.version;
    const settlement = bought.result._meta?.['x402/payment-response'] as SettleResponse;
    purchaseTx = settlement.transaction;
  });

  after(async () => {
    await Promise.all([anonymous, asSeller, asBuyer, asOutsider].map((c) => c?.close()));
    await svc?.stop();
  });

  it('lists the review and refund tools, each naming the EIP-712 typed data it takes', async () => {
    const { tools } = await anonymous.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
      'review_skill',
      'revoke_review',
      'respond_to_review',
      'get_skill_reviews',
      'request_refund',
      'refund_purchase',
      'decline_refund',
    ])
      expect(names).to.include(name);
    const review = tools.find((t) => t.name === 'review_skill')!;
    expect(review.description).to.include(
      'SkillReview{paymentId string, transaction string, postId string, version uint256, rating uint8, text string, issuedAt uint256}',
    );
    expect(review.inputSchema.required).to.have.members(['postId', 'paymentId', 'rating', 'text', 'issuedAt']);
    const refund = tools.find((t) => t.name === 'request_refund')!;
    expect(refund.description).to.include(
      'RefundRequest{paymentId string, reason string, text string, issuedAt uint256}',
    );
  });

  it('a buyer reviews with its wallet signature, get_skill_reviews shows it, and the same signature again is signature_replayed', async () => {
    const m = message();
    const signature = await signReview(buyer.account, m);
    const written = structured<Record<string, unknown>>(
      await callTool(anonymous, 'review_skill', reviewArgs(m, signature)),
    );
    expect(written).to.include({ postId, buyer: buyer.address, rating: 4, revision: 1, signedBy: 'buyer' });
    // The seller has no ERC-8004 identity: nothing to give on chain.
    expect(written).to.have.property('onChain', null);

    const doc = await eventually(async () => {
      const d = await reviewsOf(anonymous);
      return d.reviews[0]?.text === m.text ? d : undefined;
    }, 15_000);
    expect(doc.reviews[0]).to.include({ buyer: buyer.address, rating: 4 });
    expect(doc.rating).to.include({ count: 1, mean: 4 });

    const replay = await callTool(anonymous, 'review_skill', reviewArgs(m, signature));
    expect(toolErrorCode(replay)).to.equal('signature_replayed');
  });

  it('a wallet that did not pay is refused with not_buyer, by signature or by token, and nothing is written', async () => {
    const m = message({ rating: 1, text: 'Never bought it.', issuedAt: now() + 1 });
    const bySignature = await callTool(anonymous, 'review_skill', reviewArgs(m, await signReview(outsider.account, m)));
    expect(toolErrorCode(bySignature)).to.equal('not_buyer');
    const byToken = await callTool(asOutsider, 'review_skill', reviewArgs(m));
    expect(toolErrorCode(byToken)).to.equal('not_buyer');
    const unsigned = await callTool(anonymous, 'review_skill', reviewArgs(m));
    expect(toolErrorCode(unsigned)).to.equal('signature_missing');
    const malformed = await callTool(anonymous, 'review_skill', { ...reviewArgs(m), signature: '0x1234' });
    expect(malformed.isError).to.equal(true);
    expect(JSON.stringify(malformed.content)).to.include('65-byte ECDSA signature');
    const doc = await reviewsOf(anonymous);
    expect(doc.reviews.map((r) => r.text)).to.deep.equal([message().text]);
  });

  it('the seller answers a review with its agent token, and no one else can', async () => {
    const args = { postId, buyer: buyer.address, text: 'Thanks: Brest is our best chart.' };
    expect(toolErrorCode(await callTool(anonymous, 'respond_to_review', args))).to.equal('token_missing');
    expect(toolErrorCode(await callTool(asBuyer, 'respond_to_review', args))).to.equal('not_seller');
    expect(structured(await callTool(asSeller, 'respond_to_review', args))).to.deep.equal(args);
    expect(toolErrorCode(await callTool(asSeller, 'respond_to_review', args))).to.equal('response_exists');
    const doc = await eventually(async () => {
      const d = await reviewsOf(anonymous);
      return d.reviews[0]?.response ? d : undefined;
    }, 15_000);
    expect(doc.reviews[0]?.response?.text).to.equal(args.text);
  });

  it('revoke_review with the wallet signature takes the review out of get_skill_reviews and the rating', async () => {
    const issuedAt = now() + 2;
    const signature = await buyer.account.signTypedData(
      revocationTypedData(chain().chainId, { postId, paymentId, issuedAt }),
    );
    const revoked = structured(await callTool(anonymous, 'revoke_review', { postId, paymentId, issuedAt, signature }));
    expect(revoked).to.include({ status: 'revoked' });
    const doc = await eventually(async () => {
      const d = await reviewsOf(anonymous);
      return d.reviews.length === 0 ? d : undefined;
    }, 15_000);
    expect(doc.rating).to.include({ count: 0, mean: null });
    const again = await callTool(anonymous, 'revoke_review', { postId, paymentId, issuedAt, signature });
    expect(toolErrorCode(again)).to.equal('review_not_found');
  });

  it('a buyer signed in with its agent token reviews without a signature: the marketplace signs the same typed data', async () => {
    const m = message({ rating: 5, text: 'Back again: the new tables are right.', issuedAt: now() + 3 });
    const written = structured<Record<string, unknown>>(await callTool(asBuyer, 'review_skill', reviewArgs(m)));
    expect(written).to.include({ buyer: buyer.address, rating: 5, signedBy: 'marketplace' });
  });

  it('request_refund with the wallet signature opens a request; a bad or copied signature is refused', async () => {
    const reason = 'does_not_work';
    const text = 'The Saint-Malo chart is empty.';
    const byOutsider = await signRefundRequest(outsider.account, reason, text);
    expect(toolErrorCode(await callTool(anonymous, 'request_refund', byOutsider))).to.equal('signature_invalid');
    const otherText = await signRefundRequest(buyer.account, reason, 'Something else.');
    const altered = await callTool(anonymous, 'request_refund', { ...otherText, text });
    expect(toolErrorCode(altered)).to.equal('signature_invalid');
    const stale = await signRefundRequest(buyer.account, reason, text, new Date(Date.now() - 3_600_000));
    expect(toolErrorCode(await callTool(anonymous, 'request_refund', stale))).to.equal('signature_expired');
    const halfSigned = await callTool(anonymous, 'request_refund', {
      paymentId,
      reason,
      text,
      issuedAt: stale.issuedAt,
    });
    expect(halfSigned.isError).to.equal(true);
    expect(JSON.stringify(halfSigned.content)).to.include('issuedAt and signature go together');

    const signed = await signRefundRequest(buyer.account, reason, text);
    const opened = structured<{ paymentId: string; postId: string; request: Record<string, unknown> }>(
      await callTool(anonymous, 'request_refund', signed),
    );
    expect(opened).to.include({ paymentId, postId });
    expect(opened.request).to.include({ reason, text, status: 'open' });
    expect(toolErrorCode(await callTool(anonymous, 'request_refund', signed))).to.equal('signature_replayed');
  });

  it('the seller declines with its agent token, then refunds with an EIP-3009 authorization the marketplace relays', async () => {
    const decline = { paymentId, reason: 'works_as_described', text: 'The chart loads for us.' };
    expect(toolErrorCode(await callTool(anonymous, 'decline_refund', decline))).to.equal('token_missing');
    expect(toolErrorCode(await callTool(asBuyer, 'decline_refund', decline))).to.equal('not_seller');
    const declined = structured<{ request: Record<string, unknown> }>(
      await callTool(asSeller, 'decline_refund', decline),
    );
    expect(declined.request).to.include({ status: 'declined', declineReason: 'works_as_described' });

    const signed = await signAuthorization(seller.account, chain(), { to: buyer.address, value: PRICE });
    const args = { paymentId, authorization: wire(signed.authorization), signature: signed.signature };
    expect(toolErrorCode(await callTool(anonymous, 'refund_purchase', args))).to.equal('token_missing');
    const before = await balanceOf(chain(), buyer.address);
    const refunded = structured<{ settled: boolean; refund: { status: string; receipt: unknown } }>(
      await callTool(asSeller, 'refund_purchase', args),
    );
    expect(refunded.settled).to.equal(true);
    expect(refunded.refund.status).to.equal('settled');
    expect(refunded.refund.receipt).to.not.equal(null);
    expect(await balanceOf(chain(), buyer.address)).to.equal(before + PRICE);
    expect(toolErrorCode(await callTool(asSeller, 'refund_purchase', args))).to.equal('purchase_refunded');
  });
});
