import canonicalizeModule from 'canonicalize';
import { hashTypedData, keccak256, toBytes, type Address, type Hex } from 'viem';
import { z } from 'zod';
import {
  reviewTypedData,
  SKILL_REVIEW_TYPES,
  type ReviewMessage,
} from '@skill-market/skill-protocol/review-typed-data';
import type { EIP712SignedReceipt } from '../payments/protocol/extensions/offer-receipt.js';

// The package is CommonJS whose module.exports is the function; its declaration calls it `default`.
const canonicalize = canonicalizeModule as unknown as (input: unknown) => string | undefined;

/**
 * What a review is, as the buyer signs it and as the ERC-8004 Reputation Registry carries it
 * (docs/reputation.md). Everything here is a pure function of its arguments, so a client, the
 * API and the chain follower build the same typed data and the same feedback file bytes.
 */

/** The most characters of a review's or a seller's response's text. */
export const REVIEW_TEXT_MAX = 2000;
/** How far a signature's `issuedAt` may be from now: older is expired, newer is refused too. */
export const SIGNATURE_FRESH_SECONDS = 600;
/** ERC-8004 `tag1` of a review: a 0-100 value, as the registry's "starred" convention has it. */
export const FEEDBACK_TAG1 = 'starred';
/** ERC-8004 `tag2` of a review: which kind of feedback the marketplace gives. */
export const FEEDBACK_TAG2 = 'skill-review';
/** The on-chain value of n stars: 20 n on the 0-100 scale, no decimals. */
export const starsToValue = (stars: number) => stars * 20;

export {
  reviewDomain,
  reviewTypedData,
  revocationTypedData,
  type ReviewMessage,
  type RevocationMessage,
} from '@skill-market/skill-protocol/review-typed-data';

/** The buyer's statements (shared with clients) and the marketplace's attestation of a review. */
export const REVIEW_TYPES = {
  ...SKILL_REVIEW_TYPES,
  VerifiedReview: [
    { name: 'review', type: 'bytes32' },
    { name: 'paymentId', type: 'string' },
    { name: 'purchaseTransaction', type: 'string' },
    { name: 'buyer', type: 'address' },
  ],
} as const;

/**
 * The marketplace's attestation of a review: it checked the buyer's signature (`review`, the
 * EIP-712 hash of the SkillReview) against the wallet that paid in `purchaseTransaction`. Signed
 * with the receipt key in the domain `{name: "Skill Market", version: "1"}`, like the receipts.
 */
export const attestationTypedData = (m: {
  review: Hex;
  paymentId: string;
  purchaseTransaction: string;
  buyer: Address;
}) => ({
  domain: { name: 'Skill Market', version: '1' },
  types: { VerifiedReview: REVIEW_TYPES.VerifiedReview },
  primaryType: 'VerifiedReview' as const,
  message: m,
});

export const reviewHash = (chainId: number, m: ReviewMessage): Hex => hashTypedData(reviewTypedData(chainId, m));

/**
 * Review and response text: at most 2,000 characters of well-formed Unicode with no control
 * character but tab, line feed and carriage return (PostgreSQL cannot store NUL; a terminal or
 * page would act on the others).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
export const ReviewText = z
  .string()
  .max(REVIEW_TEXT_MAX, `at most ${REVIEW_TEXT_MAX} characters`)
  .refine((s) => !LONE_SURROGATE.test(s), 'must be well-formed Unicode (no lone surrogates)')
  .refine((s) => !CONTROL.test(s), 'must not contain NUL or control characters (tab and line breaks are fine)');

/** Everything the feedback file states, besides the review itself. */
export interface FeedbackFacts {
  chainId: number;
  identityRegistry: Address;
  /** The seller's ERC-8004 agent id, when it has one. */
  agentId: string | null;
  buyer: Address;
  seller: Address;
  endpoint: string;
  review: ReviewMessage;
  /** The buyer's signature, or the marketplace's when an agent signed in with its token reviewed. */
  signature: Hex;
  signedBy: 'buyer' | 'marketplace';
  receipt: EIP712SignedReceipt;
  attestation: { signature: Hex; signer: Address };
  receiptSigner: Address;
}

/**
 * The ERC-8004 feedback file of a review: the fields the specification names (agentRegistry,
 * agentId, clientAddress, createdAt, value, valueDecimals, tag1, tag2, endpoint, proofOfPayment)
 * and, under `skillMarket`, what lets anyone check it: the signed review with its EIP-712
 * definition, the x402 receipt of the purchase and the marketplace's attestation. Its bytes are
 * the RFC 8785 canonical JSON, so `feedbackHash` (keccak-256 of them) is reproducible.
 */
export function feedbackFile(f: FeedbackFacts): { text: string; hash: Hex } {
  const typed = reviewTypedData(f.chainId, f.review);
  const document = {
    agentRegistry: `eip155:${f.chainId}:${f.identityRegistry}`,
    agentId: f.agentId === null ? null : Number(f.agentId),
    clientAddress: `eip155:${f.chainId}:${f.buyer}`,
    createdAt: new Date(f.review.issuedAt * 1000).toISOString(),
    value: starsToValue(f.review.rating),
    valueDecimals: 0,
    tag1: FEEDBACK_TAG1,
    tag2: FEEDBACK_TAG2,
    endpoint: f.endpoint,
    proofOfPayment: { fromAddress: f.buyer, toAddress: f.seller, chainId: f.chainId, txHash: f.review.transaction },
    skillMarket: {
      review: {
        eip712: { domain: typed.domain, types: typed.types, primaryType: typed.primaryType },
        message: f.review,
        signature: f.signature,
        signedBy: f.signedBy,
      },
      receipt: f.receipt,
      receiptSigner: f.receiptSigner,
      attestation: {
        eip712: { domain: { name: 'Skill Market', version: '1' }, primaryType: 'VerifiedReview' },
        ...f.attestation,
      },
    },
  };
  const text = canonicalize(document);
  if (text === undefined) throw new Error('feedback file cannot be canonicalized');
  return { text, hash: keccak256(toBytes(text)) };
}
