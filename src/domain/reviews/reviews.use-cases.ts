import { getAddress, type Address, type Hex } from 'viem';
import { type Db, isUniqueViolation } from '../../data/db.js';
import { insertEvent } from '../../data/events.repository.js';
import { findPayment } from '../../data/payments.repository.js';
import { lockPostFirst } from '../../data/posts.repository.js';
import {
  findLiveReview,
  findReviewablePurchase,
  insertResponse,
  insertReviewRevision,
  lockLatestReview,
  revokeLiveReview,
  type ReviewablePurchase,
} from '../../data/reviews.repository.js';
import { AppError, ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from '../../platform/errors.js';
import { recoverHashSigner, typedDataHash } from '../../platform/secp256k1.js';
import type { AgentClaims } from '../identity/jwt.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';
import {
  attestationTypedData,
  FEEDBACK_TAG1,
  FEEDBACK_TAG2,
  feedbackFile,
  reviewHash,
  reviewTypedData,
  revocationTypedData,
  SIGNATURE_FRESH_SECONDS,
  starsToValue,
  type ReviewMessage,
} from './review-terms.js';

/** What the review use cases need: the ledger, the receipt key, the chain and the public base URL. */
export interface ReviewDeps {
  db: Db;
  receipts: ReceiptIssuer;
  chain: { chainId: number; identityRegistry: Address; reputationRegistry: Address | undefined };
  baseUrl: string;
  now?: () => Date;
}

export interface ReviewInput {
  postId: string;
  paymentId: string;
  rating: number;
  text: string;
  /** Unix seconds, as signed. */
  issuedAt: number;
  /** The buyer wallet's EIP-712 SkillReview signature; may be left out by an agent signed in with its token. */
  signature?: Hex;
  viewer?: AgentClaims;
}

/** Where the marketplace serves a feedback file: content-addressed by its keccak-256 hash. */
export const feedbackUri = (baseUrl: string, hash: string) => `${baseUrl}/api/reviews/feedback/${hash}.json`;
/** The ERC-8004 `endpoint` of a review: the skill reviewed. */
export const reviewEndpoint = (baseUrl: string, postId: string) => `${baseUrl}/api/posts/${postId}`;

const problem = (status: number, code: string, message: string) => new AppError(status, code, message);

/** Refuses a signature whose `issuedAt` is not within SIGNATURE_FRESH_SECONDS of now. */
function assertFresh(issuedAt: number, now: Date) {
  if (Math.abs(now.getTime() / 1000 - issuedAt) > SIGNATURE_FRESH_SECONDS)
    throw new UnauthorizedError(
      `issuedAt must be within ${SIGNATURE_FRESH_SECONDS / 60} minutes of now; sign again`,
      'signature_expired',
    );
}

/** Half the order of secp256k1: a signature's `s` above it is the malleable twin of one below. */
const HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/**
 * The one encoding of a 65-byte ECDSA signature: `s` in the lower half (EIP-2) and `v` 27 or 28.
 * Every other encoding of the same signature (a high `s`, `v` 0 or 1) is refused or rewritten, so
 * the uniqueness of stored signatures is the uniqueness of signatures.
 */
export function canonicalSignature(signature: Hex): Hex {
  const hex = signature.slice(2).toLowerCase();
  if (hex.length !== 130) throw new UnauthorizedError('The signature is not 65 bytes', 'signature_invalid');
  if (BigInt(`0x${hex.slice(64, 128)}`) > HALF_ORDER)
    throw new UnauthorizedError('The signature has a high s value (EIP-2): sign again', 'signature_invalid');
  const v = Number.parseInt(hex.slice(128), 16);
  return `0x${hex.slice(0, 128)}${(v < 27 ? v + 27 : v).toString(16)}`;
}

/**
 * The wallet a statement speaks for: the signer of `signature` over `hash`, or (no signature) the
 * signed-in agent's wallet. 401 for a signature that recovers no address.
 */
function speaker(hash: Hex, signature: Hex | undefined, viewer: AgentClaims | undefined): Address {
  if (signature !== undefined) canonicalSignature(signature);
  if (signature === undefined) {
    if (!viewer)
      throw new UnauthorizedError(
        'Sign the statement with the buyer wallet (signature), or send the agent token',
        'signature_missing',
      );
    return getAddress(viewer.wallet);
  }
  const signer = recoverHashSigner(hash, signature);
  if (!signer) throw new UnauthorizedError('The signature is not a valid 65-byte ECDSA signature', 'signature_invalid');
  if (viewer && signer.toLowerCase() !== viewer.wallet.toLowerCase())
    throw new ForbiddenError('The signature is not by the signed-in agent’s wallet', 'signature_not_viewer');
  return signer;
}

/** The purchase a statement names, refused with a code when it cannot be reviewed by `wallet`. */
async function reviewablePurchase(db: Db, postId: string, paymentId: string, wallet: Address) {
  const purchase = await findReviewablePurchase(db, paymentId);
  if (!purchase || purchase.post_id !== postId)
    throw new NotFoundError('No settled purchase of this skill has that payment id', 'purchase_not_found');
  if (purchase.buyer_address !== wallet.toLowerCase())
    throw new ForbiddenError('Only the wallet that paid for this purchase can review with it', 'not_buyer');
  if (purchase.buyer_agent_id === purchase.seller_id || purchase.buyer_address === purchase.seller_wallet)
    throw new ForbiddenError('A seller cannot review its own skill', 'own_skill_review');
  if (purchase.refunded_at)
    throw new ConflictError('This purchase was refunded: it carries no review', 'purchase_refunded');
  return purchase;
}

/** The marketplace's view of the feedback a review can be given on chain with, when the seller has an identity. */
export function onChainFeedback(deps: ReviewDeps, purchase: ReviewablePurchase, rating: number, hash: string) {
  if (purchase.seller_token_id === null || !deps.chain.reputationRegistry) return null;
  return {
    registry: deps.chain.reputationRegistry,
    agentRegistry: `eip155:${deps.chain.chainId}:${deps.chain.identityRegistry}`,
    agentId: purchase.seller_token_id,
    value: starsToValue(rating),
    valueDecimals: 0,
    tag1: FEEDBACK_TAG1,
    tag2: FEEDBACK_TAG2,
    endpoint: reviewEndpoint(deps.baseUrl, purchase.post_id),
    feedbackURI: feedbackUri(deps.baseUrl, hash),
    feedbackHash: hash,
  };
}

/**
 * Writes a buyer's review of a skill, or a new revision of it (the previous one is kept,
 * superseded). The review names a settled, unrefunded purchase of the skill by the wallet that
 * signs it; the stored record is its ERC-8004 feedback file, with the purchase's receipt and the
 * marketplace's attestation. Refused whole, with a code, or written whole.
 */
export async function submitReview(deps: ReviewDeps, input: ReviewInput) {
  const now = deps.now?.() ?? new Date();
  assertFresh(input.issuedAt, now);
  const known = await findReviewablePurchase(deps.db, input.paymentId);
  if (!known || known.post_id !== input.postId)
    throw new NotFoundError('No settled purchase of this skill has that payment id', 'purchase_not_found');
  const message: ReviewMessage = {
    paymentId: input.paymentId,
    transaction: known.tx_hash,
    postId: input.postId,
    version: known.post_version,
    rating: input.rating,
    text: input.text,
    issuedAt: input.issuedAt,
  };
  const typed = reviewTypedData(deps.chain.chainId, message);
  const wallet = speaker(typedDataHash(typed), input.signature, input.viewer);
  const purchase = await reviewablePurchase(deps.db, input.postId, input.paymentId, wallet);
  const payment = await findPayment(deps.db, purchase.payment_id);
  if (!payment) throw new Error(`purchase ${purchase.payment_id} has no payment`);

  const signedBy = input.signature === undefined ? 'marketplace' : 'buyer';
  const signature = canonicalSignature(input.signature ?? deps.receipts.signStatement(typed));
  const buyer = getAddress(purchase.buyer_address);
  const attestation = {
    signature: deps.receipts.signStatement(
      attestationTypedData({
        review: reviewHash(deps.chain.chainId, message),
        paymentId: purchase.payment_id,
        purchaseTransaction: purchase.tx_hash,
        buyer,
      }),
    ),
    signer: deps.receipts.address,
  };
  const file = feedbackFile({
    chainId: deps.chain.chainId,
    identityRegistry: deps.chain.identityRegistry,
    agentId: purchase.seller_token_id,
    buyer,
    seller: getAddress(purchase.pay_to),
    endpoint: reviewEndpoint(deps.baseUrl, purchase.post_id),
    review: message,
    signature,
    signedBy,
    receipt: await deps.receipts.receiptFor(payment),
    attestation,
    receiptSigner: deps.receipts.address,
  });

  try {
    const written = await deps.db.transaction().execute(async (trx) => {
      await lockPostFirst(trx, purchase.post_id);
      const latest = await lockLatestReview(trx, purchase.post_id, purchase.buyer_address);
      if (latest && latest.issued_at.getTime() >= input.issuedAt * 1000)
        throw new ConflictError(
          'A review as new or newer than this one is recorded: sign the edit with a later issuedAt',
          'signature_replayed',
        );
      const revision = (latest?.revision ?? 0) + 1;
      const row = await insertReviewRevision(trx, {
        post_id: purchase.post_id,
        seller_id: purchase.seller_id,
        buyer_address: purchase.buyer_address,
        buyer_agent_id: purchase.buyer_agent_id,
        payment_id: purchase.payment_id,
        post_version: purchase.post_version,
        revision,
        rating: input.rating,
        text: input.text,
        issued_at: new Date(input.issuedAt * 1000),
        signature: signature.toLowerCase(),
        feedback: file.text,
        feedback_hash: file.hash,
      });
      await insertEvent(trx, 'review.posted', {
        agentId: purchase.seller_id,
        postId: purchase.post_id,
        payload: { reviewId: row.id, buyer: purchase.buyer_address, rating: input.rating, revision },
      });
      return { ...row, revision };
    });
    return {
      id: written.id,
      postId: purchase.post_id,
      buyer,
      revision: written.revision,
      rating: input.rating,
      text: input.text,
      signedBy,
      signature,
      review: { domain: typed.domain, types: typed.types, primaryType: typed.primaryType, message },
      feedbackURI: feedbackUri(deps.baseUrl, file.hash),
      feedbackHash: file.hash,
      onChain: onChainFeedback(deps, purchase, input.rating, file.hash),
    };
  } catch (err) {
    if (isUniqueViolation(err))
      throw new ConflictError(
        err.constraint === 'reviews_signature_key'
          ? 'This signature was used already'
          : 'Another review was recorded at the same time',
        err.constraint === 'reviews_signature_key' ? 'signature_replayed' : 'review_conflict',
      );
    throw err;
  }
}

export interface RevocationInput {
  postId: string;
  paymentId: string;
  issuedAt?: number;
  signature?: Hex;
  viewer?: AgentClaims;
}

/** Withdraws a buyer's live review: it leaves the rating and the published reviews; its history stays. */
export async function revokeReview(deps: ReviewDeps, input: RevocationInput) {
  const now = deps.now?.() ?? new Date();
  let wallet: Address;
  if (input.signature !== undefined) {
    if (input.issuedAt === undefined)
      throw problem(400, 'issued_at_missing', 'A signed revocation states its issuedAt');
    assertFresh(input.issuedAt, now);
    const typed = revocationTypedData(deps.chain.chainId, {
      postId: input.postId,
      paymentId: input.paymentId,
      issuedAt: input.issuedAt,
    });
    wallet = speaker(typedDataHash(typed), input.signature, input.viewer);
  } else wallet = speaker('0x', undefined, input.viewer);
  const purchase = await findReviewablePurchase(deps.db, input.paymentId);
  if (!purchase || purchase.post_id !== input.postId)
    throw new NotFoundError('No settled purchase of this skill has that payment id', 'purchase_not_found');
  if (purchase.buyer_address !== wallet.toLowerCase())
    throw new ForbiddenError('Only the wallet that paid for this purchase can revoke its review', 'not_buyer');
  const live = await findLiveReview(deps.db, input.postId, purchase.buyer_address);
  if (!live) throw new NotFoundError('There is no live review of this skill by this buyer', 'review_not_found');
  // A signed revocation withdraws only what was written before it: kept by someone, it cannot
  // withdraw the buyer's next review.
  if (input.issuedAt !== undefined && input.issuedAt * 1000 < live.issued_at.getTime())
    throw new ConflictError(
      'This revocation is older than the review: sign it again with a later issuedAt',
      'signature_replayed',
    );
  try {
    await deps.db.transaction().execute(async (trx) => {
      // The revocation signature is a unique column: writing it locks the review against the
      // follower's foreign key to it, so the skill is taken first, as the follower takes it.
      await lockPostFirst(trx, live.post_id);
      const done = await revokeLiveReview(
        trx,
        live.id,
        now,
        input.signature === undefined ? null : canonicalSignature(input.signature),
      );
      if (!done.numUpdatedRows) throw new NotFoundError('The review was revoked meanwhile', 'review_not_found');
      await insertEvent(trx, 'review.revoked', {
        agentId: live.seller_id,
        postId: live.post_id,
        payload: { reviewId: live.id, buyer: live.buyer_address },
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError('This signature was used already', 'signature_replayed');
    throw err;
  }
  return { id: live.id, status: 'revoked' as const, revokedAt: now.toISOString() };
}

/** The seller's one public response to a buyer's review of its skill. */
export async function respondToReview(
  db: Db,
  seller: AgentClaims,
  input: { postId: string; buyer: string; text: string },
) {
  const buyer = input.buyer.toLowerCase();
  const live = await findLiveReview(db, input.postId, buyer);
  if (!live) throw new NotFoundError('There is no live review of this skill by this buyer', 'review_not_found');
  if (live.seller_id !== seller.sub)
    throw new ForbiddenError('Only the skill’s seller can respond to its reviews', 'not_seller');
  const written = await db.transaction().execute(async (trx) => {
    const inserted = await insertResponse(trx, {
      post_id: input.postId,
      buyer_address: buyer,
      seller_id: seller.sub,
      text: input.text,
    });
    if (inserted)
      await insertEvent(trx, 'review.responded', {
        agentId: seller.sub,
        postId: input.postId,
        payload: { reviewId: live.id, buyer },
      });
    return inserted;
  });
  if (!written) throw new ConflictError('This review has a response already: one per review', 'response_exists');
  return { postId: input.postId, buyer: getAddress(buyer), text: input.text };
}
