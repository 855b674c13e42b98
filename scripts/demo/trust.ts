/**
 * Trust among the simulated population, through the public API as outside agents build it
 * (docs/reputation.md, docs/refunds.md):
 *
 * - buyers review skills they bought, each review signed by the wallet that paid (EIP-712
 *   SkillReview). The reviews of a seller with an ERC-8004 identity are also given on the Reputation
 *   Registry from the reviewers' wallets, and the marketplace's follower verifies each against its
 *   ledger; those of a seller without one are kept by the marketplace only (not on chain);
 * - that seller answers its lowest review, publicly;
 * - two buyers ask for a refund, signed by their wallets: the seller refunds one by signing an
 *   EIP-3009 transfer of the price back to the buyer, which the marketplace relays, and declines
 *   the other, saying why.
 *
 * It uses the purchases the trading phase made where it can, and buys what is missing.
 */
import { randomBytes } from 'node:crypto';
import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import { authorizationTypes } from '@x402/evm';
import { createPublicClient, createWalletClient, getAddress, http, type Address, type Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import type { MarketApi, Payment, RefundState } from '../../src/cli/market-api.js';
import { refundRequestTypedData } from '../../src/domain/refunds/refund-typed-data.js';
import {
  giveFeedbackArgs,
  reviewTypedData,
  type OnChainFeedback,
} from '@skill-market/skill-protocol/review-typed-data';
import { localChain } from '../../src/platform/chain/clients.js';
import type { DemoAgent, DemoResult } from './marketplace.js';

/** A review the demo wrote. */
export interface DemoReview {
  postId: string;
  seller: string;
  buyer: string;
  paymentId: string;
  stars: number;
  /**
   * Its `onChain.status` in reviews.json when the demo stopped waiting: `verified` (given on the
   * Reputation Registry and verified by the marketplace), `not_on_chain` (the seller has no ERC-8004
   * identity), `not_given` (not sent, or not verified within the wait).
   */
  onChain: string;
  /** The giveFeedback transaction, when the buyer sent one. */
  feedbackTx?: string;
  /** The seller's public response, for the review it answered. */
  response?: string;
}

/** A refund request the demo made, and the seller's answer. */
export interface DemoRefund {
  paymentId: string;
  postId: string;
  seller: string;
  buyer: string;
  amountAtomic: string;
  reason: string;
  outcome: 'refunded' | 'declined';
  /** The refund's transaction (seller to buyer), once settled. */
  txHash?: string;
  declineReason?: string;
}

export interface TrustHooks {
  /** Called once the plan is known, with the number of steps to come. */
  onPhase: (total: number) => void;
  step: (detail: string) => void;
  /** Runs `fn`, recording a failure under `what` instead of throwing. */
  attempt: (what: string, fn: () => Promise<void>) => Promise<void>;
}

type Skill = DemoResult['skills'][number];
interface Slot {
  buyer: DemoAgent;
  skill: Skill;
  /** A purchase of the trading phase to use; none: the buyer buys the skill first. */
  paymentId?: string;
}

/** Stars of the reviews of the seller with an ERC-8004 identity, and of the one without. */
const ON_CHAIN_STARS = [5, 4, 2];
const OFF_CHAIN_STARS = [5, 3];
const WORDS: Record<number, string> = {
  5: 'Did exactly what the description says; clean JSON on the first run.',
  4: 'Solid and well documented; one edge case needed a second pass.',
  3: 'Works, but the examples are thin.',
  2: 'Half of my inputs failed: the steps assume a layout mine did not have.',
};
const RESPONSE =
  'Thanks for the detail: version 2 handles that layout. Send us a sample and we will add it to the tests.';
const ACCEPTED = { reason: 'does_not_work', text: 'It fails on every scanned page I tried.' };
const DECLINED = {
  request: { reason: 'not_as_described', text: 'I expected it to cover spreadsheets too.' },
  answer: {
    reason: 'works_as_described',
    text: 'The description lists the inputs it reads; spreadsheets are not one.',
  },
};
/** The longest the demo waits for a payment, a refund or the follower's verification. */
const WAIT_MS = 30_000;

const chainIdOf = (network: string) => Number(/^eip155:(\d+)$/.exec(network)?.[1] ?? Number.NaN);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reviews, a response and refunds among the population `result` holds; they land in `result.reviews` and `result.refunds`. */
export async function runTrust(api: MarketApi, result: DemoResult, hooks: TrustHooks): Promise<void> {
  const { step, attempt } = hooks;
  const agent = (handle: string) => result.agents.find((a) => a.handle === handle);
  const skillOf = (id: string) => result.skills.find((s) => s.id === id);
  const paidSkills = (seller: DemoAgent) =>
    result.skills.filter((s) => s.seller === seller.handle && s.priceAtomic !== '0');
  const sales = (seller: DemoAgent) =>
    result.purchases.filter((p) => p.paid && skillOf(p.skillId)?.seller === seller.handle).length;
  // The busiest sellers of paid skills: one with an ERC-8004 identity, one without.
  const sellers = result.agents.filter((a) => paidSkills(a).length > 0).sort((a, b) => sales(b) - sales(a));
  const identified = sellers.find((a) => a.erc8004AgentId);
  const plain = sellers.find((a) => !a.erc8004AgentId);

  // One review per buyer and skill (a second one would be a new revision), and the refunded
  // purchases apart from the reviewed ones, so each skill's rating counts exactly the reviews
  // written. Slots fill the seller's best-selling skill first, so one skill shows several reviews.
  const taken = new Set<string>();
  const slots = (seller: DemoAgent | undefined, n: number): Slot[] => {
    const out: Slot[] = [];
    if (!seller) return out;
    const bought = (skill: Skill) => result.purchases.filter((p) => p.paid && p.paymentId && p.skillId === skill.id);
    const free = (buyer: string, skill: Skill) => !taken.has(`${buyer}:${skill.id}`) && buyer !== seller.handle;
    const take = (slot: Slot) => {
      taken.add(`${slot.buyer.handle}:${slot.skill.id}`);
      out.push(slot);
    };
    for (const skill of paidSkills(seller).sort((a, b) => bought(b).length - bought(a).length)) {
      for (const p of bought(skill)) {
        const buyer = agent(p.buyer);
        if (out.length < n && buyer && free(buyer.handle, skill)) take({ buyer, skill, paymentId: p.paymentId });
      }
      for (const buyer of result.agents) if (out.length < n && free(buyer.handle, skill)) take({ buyer, skill });
    }
    return out;
  };
  const onChainSlots = slots(identified, ON_CHAIN_STARS.length);
  const offChainSlots = slots(plain, OFF_CHAIN_STARS.length);
  const refundSlots = slots(identified ?? plain, 2);
  const answered = onChainSlots.length > 0 ? 1 : 0;
  hooks.onPhase(onChainSlots.length + offChainSlots.length + refundSlots.length + answered + 1);

  /** The slot's purchase, bought now when the trading phase made none, once it settled. */
  const purchase = async (slot: Slot): Promise<Payment> => {
    let id = slot.paymentId;
    if (!id) {
      const bought = await api.buy(slot.buyer.account, slot.skill.id);
      if (!bought.paymentId) throw new Error(`buying ${slot.skill.id} answered no payment id`);
      id = slot.paymentId = bought.paymentId;
      result.purchases.push({
        buyer: slot.buyer.handle,
        skillId: slot.skill.id,
        paid: true,
        paymentId: id,
        transaction: bought.transaction,
      });
    }
    const payment = await api.waitForPayment(id, WAIT_MS);
    if (payment.status !== 'settled') throw new Error(`payment ${id} is ${payment.status}, not settled`);
    return payment;
  };

  // 1. Reviews, signed by the paying wallets; given on chain when the seller has an identity.
  const review = (slot: Slot, stars: number) =>
    attempt(`@${slot.buyer.handle} reviews ${slot.skill.id}`, async () => {
      const payment = await purchase(slot);
      const paymentId = payment.id;
      const { purchase: bought } = await api.json<{ purchase?: { transaction: string; version: number } | null }>(
        `/api/payments/${paymentId}/receipt`,
      );
      if (!bought) throw new Error(`the receipt of payment ${paymentId} names no purchase`);
      const chainId = chainIdOf(payment.network);
      const message = {
        paymentId,
        transaction: bought.transaction,
        postId: slot.skill.id,
        version: bought.version,
        rating: stars,
        text: WORDS[stars] ?? '',
        issuedAt: Math.floor(Date.now() / 1000),
      };
      const signature = await slot.buyer.account.signTypedData(reviewTypedData(chainId, message));
      const written = await api.json<{ onChain: OnChainFeedback | null }>(`/api/posts/${slot.skill.id}/reviews`, {
        json: { paymentId, rating: stars, text: message.text, issuedAt: message.issuedAt, signature },
      });
      const feedbackTx = written.onChain
        ? await giveFeedback(api, slot.buyer.account, chainId, written.onChain)
        : undefined;
      result.reviews.push({
        postId: slot.skill.id,
        seller: slot.skill.seller,
        buyer: slot.buyer.handle,
        paymentId,
        stars,
        onChain: 'not_given',
        ...(feedbackTx ? { feedbackTx } : {}),
      });
      step(
        `@${slot.buyer.handle} gave "${slot.skill.title}" ${stars} star(s)${feedbackTx ? ', on chain' : ', not on chain (no seller identity)'}`,
      );
    });
  for (const [i, slot] of onChainSlots.entries()) await review(slot, ON_CHAIN_STARS[i]!);
  for (const [i, slot] of offChainSlots.entries()) await review(slot, OFF_CHAIN_STARS[i]!);

  // 2. The seller answers its lowest review.
  const lowest = result.reviews.filter((r) => r.seller === identified?.handle).sort((a, b) => a.stars - b.stars)[0];
  if (identified && lowest)
    await attempt(`@${identified.handle} responds to a review`, async () => {
      const buyer = agent(lowest.buyer)!.account.address;
      await api.json(`/api/posts/${lowest.postId}/reviews/${buyer}/response`, {
        token: identified.token,
        json: { text: RESPONSE },
      });
      lowest.response = RESPONSE;
      step(`@${identified.handle} answered @${lowest.buyer}'s ${lowest.stars}-star review`);
    });

  // 3. reviews.json is republished within seconds of a review, and the follower verifies the
  // feedback given on chain: wait for both (bounded), reading where every review stands.
  await attempt('reviews listed and verified', async () => {
    const listed = new Set<string>();
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      for (const postId of new Set(result.reviews.map((r) => r.postId))) {
        const doc = await api.json<{ reviews: { paymentId: string; onChain: { status: string } }[] }>(
          `/api/posts/${postId}/reviews.json`,
        );
        for (const r of result.reviews.filter((x) => x.postId === postId)) {
          const entry = doc.reviews.find((d) => d.paymentId === r.paymentId);
          if (entry) listed.add(r.paymentId);
          r.onChain = entry?.onChain.status ?? r.onChain;
        }
      }
      const waiting = result.reviews.filter(
        (r) => !listed.has(r.paymentId) || (r.feedbackTx && r.onChain !== 'verified'),
      );
      if (!waiting.length) break;
      if (Date.now() > deadline)
        throw new Error(
          `${waiting.length} review(s) not in reviews.json, or not verified on chain, within ${WAIT_MS / 1000} s`,
        );
      await sleep(500);
    }
    const verified = result.reviews.filter((r) => r.onChain === 'verified').length;
    step(`${verified} review(s) verified on the Reputation Registry`);
  });

  // 4. Refunds: the buyers ask, signed by their wallets; the seller refunds one and declines the other.
  const [toRefund, toDecline] = refundSlots;
  if (toRefund)
    await attempt(`refund of a purchase by @${toRefund.buyer.handle}`, async () => {
      const payment = await purchase(toRefund);
      await requestRefund(api, toRefund.buyer.account, payment, ACCEPTED);
      const seller = agent(toRefund.skill.seller)!;
      const state = await refund(api, seller, toRefund.buyer.account.address, toRefund.skill.id, payment);
      result.refunds.push({
        paymentId: payment.id,
        postId: toRefund.skill.id,
        seller: seller.handle,
        buyer: toRefund.buyer.handle,
        amountAtomic: payment.amount,
        reason: ACCEPTED.reason,
        outcome: 'refunded',
        ...(state.refund?.txHash ? { txHash: state.refund.txHash } : {}),
      });
      step(`@${seller.handle} refunded ${Number(payment.amount) / 1e6} USDC to @${toRefund.buyer.handle}`);
    });
  if (toDecline)
    await attempt(`declined refund of a purchase by @${toDecline.buyer.handle}`, async () => {
      const payment = await purchase(toDecline);
      await requestRefund(api, toDecline.buyer.account, payment, DECLINED.request);
      const seller = agent(toDecline.skill.seller)!;
      await api.json(`/api/purchases/${payment.id}/refund-request/decline`, {
        token: seller.token,
        json: DECLINED.answer,
      });
      result.refunds.push({
        paymentId: payment.id,
        postId: toDecline.skill.id,
        seller: seller.handle,
        buyer: toDecline.buyer.handle,
        amountAtomic: payment.amount,
        reason: DECLINED.request.reason,
        outcome: 'declined',
        declineReason: DECLINED.answer.reason,
      });
      step(`@${seller.handle} declined @${toDecline.buyer.handle}'s refund request (${DECLINED.answer.reason})`);
    });
}

/**
 * Sends the review's giveFeedback from the buyer's wallet, on the chain the development faucet
 * names (which also tops the wallet's gas up); undefined when the market has no faucet to name it.
 */
async function giveFeedback(
  api: MarketApi,
  account: PrivateKeyAccount,
  chainId: number,
  o: OnChainFeedback,
): Promise<Hex | undefined> {
  const rpcUrl = (await api.faucet(account.address, 1n))?.rpcUrl;
  if (!rpcUrl) return undefined;
  const chain = localChain(chainId, rpcUrl);
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) });
  const reader = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 250 });
  const hash = await wallet.writeContract({
    address: o.registry,
    abi: REPUTATION_REGISTRY_ABI,
    functionName: 'giveFeedback',
    args: giveFeedbackArgs(o),
  });
  const receipt = await reader.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`giveFeedback reverted in ${hash}`);
  return hash;
}

/** The buyer asks for a refund with its wallet's EIP-712 RefundRequest (no account needed). */
async function requestRefund(
  api: MarketApi,
  buyer: PrivateKeyAccount,
  payment: Payment,
  ask: { reason: string; text: string },
) {
  const issuedAt = new Date();
  const signature = await buyer.signTypedData({
    ...refundRequestTypedData(chainIdOf(payment.network)),
    message: { paymentId: payment.id, ...ask, issuedAt: BigInt(Math.floor(issuedAt.getTime() / 1000)) },
  });
  await api.json(`/api/purchases/${payment.id}/refund-request`, {
    json: { ...ask, issuedAt: issuedAt.toISOString(), signature },
  });
}

/**
 * The seller refunds: an EIP-3009 TransferWithAuthorization of exactly the amount paid, from its
 * wallet (the purchase's payTo) to the buyer, in the domain of the USDC the skill's x402 offer
 * names; the marketplace relays it. Resolves once the refund settled.
 */
async function refund(
  api: MarketApi,
  seller: DemoAgent,
  buyer: Address,
  postId: string,
  payment: Payment,
): Promise<RefundState> {
  const offer = (await api.paymentOffer(postId))?.find((a) => a.network === payment.network);
  const { name, version } = offer?.extra ?? {};
  if (!offer || typeof name !== 'string' || typeof version !== 'string')
    throw new Error(`skill ${postId} offers no x402 payment naming its USDC's EIP-712 domain`);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: seller.account.address,
    to: buyer,
    value: BigInt(payment.amount),
    validAfter: now - 60n,
    validBefore: now + 600n,
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
  };
  const signature = await seller.account.signTypedData({
    domain: { name, version, chainId: chainIdOf(payment.network), verifyingContract: getAddress(offer.asset) },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const res = await api.send(`/api/purchases/${payment.id}/refund`, {
    token: seller.token,
    json: {
      authorization: {
        ...authorization,
        value: authorization.value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
      },
      signature,
    },
  });
  let state = (await res.json()) as RefundState;
  // 202: relayed, its outcome not heard yet; the chain decides it (and the reconciler records it).
  for (const deadline = Date.now() + WAIT_MS; state.refund?.status === 'relaying' && Date.now() < deadline; ) {
    await sleep(500);
    state = (await api.refundOf(payment.id)) ?? state;
  }
  if (state.refund?.status !== 'settled')
    throw new Error(`the refund of payment ${payment.id} is ${state.refund?.status ?? 'missing'}, not settled`);
  return state;
}
