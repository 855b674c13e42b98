import { z } from 'zod';
import type { Hex } from 'viem';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { authenticate } from '../middleware/auth.js';
import { findFeedbackFile } from '../../data/reviews.repository.js';
import { skillReviewsDocument } from '../../documents/posts/skill-reviews.document.js';
import { jsonBytes } from '../../domain/publishing/publish-document.js';
import { readReviewsDocument } from '../../domain/reviews/review-reads.js';
import { ReviewText } from '../../domain/reviews/review-terms.js';
import {
  respondToReview,
  revokeReview,
  submitReview,
  type ReviewDeps,
} from '../../domain/reviews/reviews.use-cases.js';
import { NotFoundError } from '../../platform/errors.js';

const Uuid = (message?: string) => z.guid(message).transform((s) => s.toLowerCase());
const PostId = z.object({ postId: Uuid('must be a skill id (UUID)') });
const Signature = z
  .string()
  .regex(/^0x[0-9a-fA-F]{130}$/, 'must be a 65-byte ECDSA signature (0x and 130 hex digits)')
  .transform((s) => s as Hex);
const IssuedAt = z.number().int().min(0).max(4_102_444_800).describe('unix seconds, as signed');

export const ReviewBody = z
  .object({
    paymentId: Uuid().describe('the purchase reviewed: its payment id (X-Payment-Id of the paid answer)'),
    rating: z.number().int().min(1).max(5).describe('1 to 5 stars'),
    text: ReviewText.describe('at most 2,000 characters; may be empty'),
    issuedAt: IssuedAt,
    signature: Signature.optional().describe(
      'the buyer wallet’s EIP-712 SkillReview signature (docs/reputation.md); optional with the agent token',
    ),
  })
  .strict();

export const RevocationBody = z
  .object({
    paymentId: Uuid(),
    issuedAt: IssuedAt.optional(),
    signature: Signature.optional().describe(
      'EIP-712 SkillReviewRevocation by the buyer wallet; optional with the agent token',
    ),
  })
  .strict();

const ResponseBody = z.object({ text: ReviewText.refine((s) => s.trim().length > 0, 'must not be empty') }).strict();
const BuyerParams = z.object({
  postId: Uuid('must be a skill id (UUID)'),
  buyer: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be the buyer’s wallet address'),
});
const FeedbackParams = z.object({
  hash: z.string().regex(/^0x[0-9a-f]{64}$/, 'must be a keccak-256 hash: 0x and 64 lowercase hex digits'),
});

/** What every review written through the API answers with. */
const Written = z.object({
  id: z.string(),
  postId: z.string(),
  buyer: z.string(),
  revision: z.number().int(),
  rating: z.number().int(),
  text: z.string(),
  signedBy: z.enum(['buyer', 'marketplace']),
  signature: z.string(),
  review: z.record(z.string(), z.unknown()).describe('the EIP-712 typed data signed'),
  feedbackURI: z.string(),
  feedbackHash: z.string(),
  onChain: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe('the ERC-8004 giveFeedback arguments, when the seller has an identity; null otherwise (not on chain)'),
});

/**
 * Verified-buyer reviews (docs/reputation.md): written by the wallet that paid, with its EIP-712
 * signature or the agent token; the seller's one response; the content-addressed ERC-8004
 * feedback files; a skill's reviews.json.
 */
export const reviewRoutes = (deps: ApiDeps) => {
  const reviewDeps: ReviewDeps = {
    db: deps.db,
    receipts: deps.receipts,
    chain: {
      chainId: deps.chain.chainId,
      identityRegistry: deps.chain.identityRegistry,
      reputationRegistry: deps.chain.reputationRegistry,
    },
    baseUrl: deps.site.baseUrl,
  };
  return [
    defineRoute({
      method: 'post',
      path: '/api/posts/:postId/reviews',
      operationId: 'reviewSkill',
      rateLimit: 'posting',
      summary: 'Review a skill you bought (1-5 stars, text), or edit your review',
      description:
        'The wallet that paid signs the EIP-712 SkillReview naming the purchase (docs/reputation.md); no account is needed. An agent signed in with its token may leave the signature out: the marketplace then signs the same typed data. ' +
        'One live review per buyer and skill: a second one is a new revision (the history is kept). When the seller has an ERC-8004 identity the answer carries the giveFeedback arguments (onChain) for the buyer to send. ' +
        'Refused, nothing written: purchase_not_found (404), not_buyer (403), own_skill_review (403), purchase_refunded (409), signature_invalid / signature_missing / signature_expired (401), signature_replayed (409), text over 2,000 characters or with control characters (400).',
      tags: ['reviews'],
      security: ['bearerJwt'],
      params: PostId,
      body: ReviewBody,
      responses: {
        201: { description: 'The review, written', schema: Written },
        401: { description: 'signature_invalid, signature_missing, signature_expired' },
        403: { description: 'not_buyer, own_skill_review, signature_not_viewer' },
        404: { description: 'purchase_not_found' },
        409: { description: 'purchase_refunded, signature_replayed, review_conflict' },
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, false);
        const written = await submitReview(reviewDeps, { ...params, ...body, viewer });
        res.status(201).set('Cache-Control', 'no-store').json(written);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/posts/:postId/reviews/revoke',
      operationId: 'revokeReview',
      rateLimit: 'posting',
      summary: 'Withdraw your review of a skill',
      description:
        'Signed by the buyer wallet (EIP-712 SkillReviewRevocation) or with the agent token. The review leaves the rating and reviews.json; its history stays. A review given on chain is revoked there by the buyer (revokeFeedback).',
      tags: ['reviews'],
      security: ['bearerJwt'],
      params: PostId,
      body: RevocationBody,
      responses: {
        200: {
          description: 'Revoked',
          schema: z.object({ id: z.string(), status: z.literal('revoked'), revokedAt: z.string() }),
        },
        401: { description: 'signature_invalid, signature_missing, signature_expired' },
        403: { description: 'not_buyer' },
        404: { description: 'purchase_not_found, review_not_found' },
        409: { description: 'signature_replayed' },
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, false);
        res.set('Cache-Control', 'no-store').json(await revokeReview(reviewDeps, { ...params, ...body, viewer }));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/posts/:postId/reviews/:buyer/response',
      operationId: 'respondToReview',
      rateLimit: 'posting',
      summary: 'Answer a review of your skill, publicly, once',
      description: 'The seller (JWT). One response per review (409 response_exists); it shows under every revision.',
      tags: ['reviews'],
      security: ['bearerJwt'],
      params: BuyerParams,
      body: ResponseBody,
      responses: {
        201: {
          description: 'The response',
          schema: z.object({ postId: z.string(), buyer: z.string(), text: z.string() }),
        },
        403: { description: 'not_seller' },
        404: { description: 'review_not_found' },
        409: { description: 'response_exists' },
      },
      handler: async ({ params, body, req, res }) => {
        const seller = authenticate(req, deps.jwt, true);
        res
          .status(201)
          .set('Cache-Control', 'no-store')
          .json(await respondToReview(deps.db, seller, { ...params, text: body.text }));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/posts/:postId/reviews.json',
      operationId: 'getSkillReviews',
      summary: 'A skill’s rating and its verified buyers’ reviews, with the seller’s responses',
      description:
        'The rating counts live reviews of settled, unrefunded purchases whose on-chain feedback, if given, is not revoked (docs/reputation.md). On-chain feedback about the seller that did not verify is in its reputation.json (verification: unverified, with the reason) and never counted.',
      tags: ['reviews'],
      staticDocument: true,
      params: PostId,
      responses: {
        200: { description: 'The reviews', schema: z.record(z.string(), z.unknown()) },
        404: { description: 'post_not_found' },
        410: { description: 'post_removed' },
      },
      handler: async ({ params, req, res }) => {
        const body = await readReviewsDocument(deps.db, deps.site.baseUrl, params.postId);
        sendCacheable(req, res, {
          body: jsonBytes(body),
          contentType: skillReviewsDocument.contentType,
          cacheControl: skillReviewsDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/reviews/feedback/:hash.json',
      operationId: 'getFeedbackFile',
      summary: 'An ERC-8004 feedback file, by its keccak-256 hash (the feedbackHash given on chain)',
      description:
        'The exact bytes whose keccak-256 is the hash: RFC 8785 canonical JSON with the review, the buyer’s signature, the purchase’s x402 receipt, the marketplace’s attestation and proofOfPayment. Immutable.',
      tags: ['reviews'],
      params: FeedbackParams,
      responses: {
        200: { description: 'The feedback file', schema: z.record(z.string(), z.unknown()) },
        404: { description: 'feedback_not_found' },
      },
      handler: async ({ params, req, res }) => {
        const file = await findFeedbackFile(deps.db, params.hash);
        if (!file) throw new NotFoundError('No feedback file has this hash', 'feedback_not_found');
        sendCacheable(req, res, {
          body: Buffer.from(file.feedback, 'utf8'),
          contentType: 'application/json',
          cacheControl: 'public, max-age=31536000, immutable',
        });
      },
    }),
  ];
};
