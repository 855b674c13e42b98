import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import type { Address } from 'viem';
import { runCli } from '../support/cli.js';
import { balanceOf } from '../support/buyers.js';
import { eventually, settledPayment, startTestService, type TestService } from '../support/service.js';
import { skillMd } from '../support/skills.js';

const PRICE = 1_500_000n;

interface ReviewsDoc {
  rating: { count: number; mean: number | null };
  reviews: Array<{
    buyer: string;
    rating: number;
    text: string;
    onChain: { status: string; txHash: string | null; feedbackIndex: number | null };
    response: { text: string } | null;
  }>;
}

/**
 * `skill-market review` and `skill-market refund` against the real service: a buyer and a seller
 * registered through the client (the seller with an ERC-8004 identity), each with its key in the
 * agents folder.
 */
describe('the skill-market client reviews and refunds', function () {
  this.timeout(240_000);
  let svc: TestService;
  let cwd: string;
  let postId: string;
  let paymentId: string;
  let buyer: Address;
  let seller: Address;
  let feedbackIndex: number;

  const chain = () => svc.service.runtime.chain;
  const cli = (args: string[]) => runCli(args, { cwd, url: svc.url });
  const ok = async (args: string[]) => {
    const r = await cli(args);
    expect(r.code, `${args.join(' ')}: ${r.err}`).to.equal(0);
    return r.out;
  };
  const field = (text: string, name: string) => new RegExp(`^\\s*${name}\\s+(\\S+)`, 'm').exec(text)?.[1];
  const reviews = async (): Promise<ReviewsDoc> => (await fetch(`${svc.url}/api/posts/${postId}/reviews.json`)).json();
  const reviewsWhen = (ok: (d: ReviewsDoc) => boolean) =>
    eventually(async () => {
      const d = await reviews();
      return ok(d) ? d : undefined;
    }, 20_000);
  const agentFile = (handle: string) =>
    JSON.parse(readFileSync(join(cwd, '.skill-market', `${handle}.json`), 'utf8')) as {
      address: Address;
      erc8004AgentId?: string;
    };
  const buySkill = async () => {
    const id = field(await ok(['buy', 'rev-buyer', postId]), 'payment') as string;
    expect(id).to.match(/^[0-9a-f-]{36}$/);
    await settledPayment(svc.url, id);
    return id;
  };

  before(async () => {
    svc = await startTestService();
    cwd = mkdtempSync(join(tmpdir(), 'skill-market-cli-reviews-'));
    await ok(['register', 'rev-seller', '--erc8004']);
    await ok(['register', 'rev-buyer']);
    seller = agentFile('rev-seller').address;
    buyer = agentFile('rev-buyer').address;
    const folder = join(cwd, 'tide-tables');
    mkdirSync(folder);
    writeFileSync(join(folder, 'SKILL.md'), skillMd('tide-tables', { description: 'Reads tide tables.' }));
    const published = await ok(['publish', 'rev-seller', 'tide-tables', '--title', 'Tide tables', '--price', '1.5']);
    postId = /^published (\S+)/m.exec(published)?.[1] as string;
    paymentId = await buySkill();
  });
  after(async () => {
    await svc?.stop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('when the buyer reviews with --stars 5, then it is signed, given on chain from its wallet and verified there', async () => {
    const out = await ok(['review', 'rev-buyer', postId, '--stars', '5', '--text', 'Right for Brest, every tide.']);
    expect(out).to.match(new RegExp(`^reviewed ${postId}: 5 star\\(s\\), signed by ${buyer}`, 'm'));
    expect(field(out, 'review')).to.match(/^[0-9a-f-]{36}$/);
    expect(field(out, 'revision')).to.equal('1');
    // Found among the agent's payments: the purchase it made of this skill.
    expect(field(out, 'payment')).to.equal(paymentId);
    expect(field(out, 'feedback URI')).to.match(/\/api\/reviews\/feedback\/0x[0-9a-f]{64}\.json$/);
    expect(field(out, 'feedback hash')).to.match(/^0x[0-9a-f]{64}$/);
    const tx = /giveFeedback in transaction (0x[0-9a-f]{64})/.exec(out)?.[1];
    expect(tx, out).to.be.a('string');

    const doc = await reviewsWhen((d) => d.reviews[0]?.onChain.status === 'verified');
    expect(doc.reviews[0]).to.include({ buyer, rating: 5, text: 'Right for Brest, every tide.' });
    expect(doc.reviews[0]?.onChain.txHash).to.equal(tx);
    expect(doc.rating).to.include({ count: 1, mean: 5 });
    feedbackIndex = doc.reviews[0]?.onChain.feedbackIndex as number;
    expect(feedbackIndex).to.be.a('number');
  });

  it('when the seller responds, then the response shows under the review, and a second one is refused with its code', async () => {
    const out = await ok([
      'review',
      'respond',
      'rev-seller',
      postId,
      buyer,
      '--text',
      'Thanks, Brest is our best port.',
    ]);
    expect(out).to.include(`responded to ${buyer}'s review of ${postId}`);
    const doc = await reviewsWhen((d) => Boolean(d.reviews[0]?.response));
    expect(doc.reviews[0]?.response?.text).to.equal('Thanks, Brest is our best port.');

    const again = await cli(['review', 'respond', 'rev-seller', postId, buyer, '--text', 'Again']);
    expect(again.code).to.equal(1);
    expect(again.err).to.include('response_exists');
    expect(again.err).to.match(/\[market_refused\]$/);
  });

  it('refuses, with a code, a review without stars, by an agent that did not buy, or of a skill it is not', async () => {
    const noStars = await cli(['review', 'rev-buyer', postId]);
    expect(noStars.code).to.equal(1);
    expect(noStars.err).to.match(/\[invalid_option\]$/);
    const notBought = await cli(['review', 'rev-seller', postId, '--stars', '3']);
    expect(notBought.code).to.equal(1);
    expect(notBought.err).to.match(/\[no_purchase\]$/);
    const notAPost = await cli(['review', 'rev-buyer', 'tide-tables', '--stars', '3']);
    expect(notAPost.code).to.equal(1);
    expect(notAPost.err).to.match(/\[invalid_argument\]$/);
    expect((await reviews()).reviews).to.have.length(1);
  });

  it('when the buyer revokes, then the feedback is revoked on chain and the rating counts no review', async () => {
    const out = await ok(['review', 'rev-buyer', postId, '--revoke']);
    expect(out).to.match(/revokeFeedback\(\d+, \d+\) in transaction 0x[0-9a-f]{64}/);
    expect(out).to.match(/^revoked review [0-9a-f-]{36} of /m);
    const doc = await reviewsWhen((d) => d.reviews.length === 0);
    expect(doc.rating.count).to.equal(0);
    const [, , , , isRevoked] = await chain().publicClient.readContract({
      address: chain().reputationRegistry as Address,
      abi: REPUTATION_REGISTRY_ABI,
      functionName: 'readFeedback',
      args: [BigInt(agentFile('rev-seller').erc8004AgentId as string), buyer, BigInt(feedbackIndex)],
    });
    expect(isRevoked).to.equal(true);
  });

  it('when the seller accepts a refund request, then exactly the price moves back to the buyer, with a valid receipt', async () => {
    const asked = await ok([
      'refund',
      'request',
      'rev-buyer',
      paymentId,
      '--reason',
      'does_not_work',
      '--text',
      'No table for Saint-Malo.',
    ]);
    expect(asked).to.match(/request\s+open: does_not_work "No table for Saint-Malo\."/);
    const [buyerBefore, sellerBefore] = await Promise.all([balanceOf(chain(), buyer), balanceOf(chain(), seller)]);
    const accepted = await ok(['refund', 'accept', 'rev-seller', paymentId]);
    expect(accepted).to.match(new RegExp(`^refunded 1\\.5 USDC to ${buyer}`, 'm'));
    expect(accepted).to.match(/receipt\s+valid/);
    expect(await balanceOf(chain(), buyer)).to.equal(buyerBefore + PRICE);
    expect(await balanceOf(chain(), seller)).to.equal(sellerBefore - PRICE);

    const shown = await ok(['refund', 'show', paymentId]);
    expect(shown).to.match(/request\s+accepted: does_not_work/);
    expect(shown).to.match(/refund\s+settled: 1\.5 USDC from /);
    expect(field(shown, 'transaction')).to.match(/^0x[0-9a-f]{64}$/);
    expect(shown).to.match(/receipt\s+valid, signed by 0x/);

    const twice = await cli(['refund', 'accept', 'rev-seller', paymentId]);
    expect(twice.code).to.equal(1);
    expect(twice.err).to.include('purchase_refunded');
  });

  it('when the seller declines a request, then it is public with the reason, and nothing moves', async () => {
    const again = await buySkill();
    await ok(['refund', 'request', 'rev-buyer', again, '--reason', 'other']);
    const before = await balanceOf(chain(), buyer);
    const declined = await ok([
      'refund',
      'decline',
      'rev-seller',
      again,
      '--reason',
      'works_as_described',
      '--text',
      'Saint-Malo is in the second file.',
    ]);
    expect(declined).to.match(/declined\s+works_as_described "Saint-Malo is in the second file\."/);
    const shown = await ok(['refund', 'show', again]);
    expect(shown).to.match(/request\s+declined: other/);
    expect(shown).to.match(/refund\s+\(none\)/);
    expect(await balanceOf(chain(), buyer)).to.equal(before);

    const closed = await cli(['refund', 'decline', 'rev-seller', again, '--reason', 'other']);
    expect(closed.code).to.equal(1);
    expect(closed.err).to.include('refund_request_closed');
    const unknownReason = await cli(['refund', 'request', 'rev-buyer', again, '--reason', 'bored']);
    expect(unknownReason.code).to.equal(1);
    expect(unknownReason.err).to.match(/answered 400/);
  });

  it('review and refund have --help with examples', async () => {
    for (const command of [['review'], ['review', 'respond'], ['refund'], ['refund', 'accept']]) {
      const { code, out } = await cli([...command, '--help']);
      expect(code, command.join(' ')).to.equal(0);
      expect(out).to.include(`Usage: skill-market ${command.join(' ')}`);
      expect(out).to.include('Examples:');
    }
  });
});
