import { getAddress } from 'viem';
import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_SITE, EXAMPLE_TIME } from '../examples.js';
import { arrayOf, boolean, integer, nullable, object, string } from '../schema-parts.js';

/** The rating prior (docs/reputation.md "Rating"): as if every skill had 5 reviews of 3 stars more. */
export const RATING_PRIOR = { mean: 3, weight: 5 } as const;
/** How many reviews reviews.json lists, newest first. */
export const REVIEWS_LISTED = 100;

export interface RatingCounts {
  count: number;
  total: number;
  /** Reviews of 1 to 5 stars. */
  distribution: number[];
}

/** A rating as the reputation documents state it: count, mean, distribution and the Bayesian-adjusted mean. */
export function ratingView(r: RatingCounts) {
  const [one = 0, two = 0, three = 0, four = 0, five = 0] = r.distribution;
  return {
    count: r.count,
    mean: r.count ? Math.round((r.total / r.count) * 100) / 100 : null,
    adjusted: r.count
      ? Math.round(((RATING_PRIOR.weight * RATING_PRIOR.mean + r.total) / (RATING_PRIOR.weight + r.count)) * 1000) /
        1000
      : null,
    distribution: { '1': one, '2': two, '3': three, '4': four, '5': five },
    prior: RATING_PRIOR,
  };
}

/** A live review as reviews.json lists it. */
export interface ReviewEntry {
  id: string;
  buyer_address: string;
  buyer_handle: string | null;
  payment_id: string;
  purchase_tx: string;
  post_version: number;
  revision: number;
  rating: number;
  text: string;
  issued_at: Date;
  signature: string;
  feedback_hash: string;
  refunded: boolean;
  response_text: string | null;
  response_at: Date | null;
  chain_tx: string | null;
  chain_index: string | null;
  chain_verification: 'verified' | 'unverified' | null;
  chain_revoked: boolean;
}

export interface SkillReviewsView {
  postId: string;
  rating: RatingCounts;
  reviews: readonly ReviewEntry[];
  /** Whether the seller has an ERC-8004 identity, so its reviews can be given on chain. */
  sellerOnChain: boolean;
  baseUrl: string;
}

/** Where a review stands on chain: verified feedback, revoked, or not given (yet, or ever). */
function chainState(r: ReviewEntry, sellerOnChain: boolean) {
  if (r.chain_tx && r.chain_verification === 'verified')
    return {
      status: r.chain_revoked ? 'revoked' : 'verified',
      txHash: r.chain_tx,
      feedbackIndex: Number(r.chain_index),
    };
  return { status: sellerOnChain ? 'not_given' : 'not_on_chain', txHash: null, feedbackIndex: null };
}

export function renderSkillReviews(v: SkillReviewsView) {
  return {
    postId: v.postId,
    rating: ratingView(v.rating),
    reviews: v.reviews.map((r) => ({
      id: r.id,
      buyer: getAddress(r.buyer_address),
      buyerHandle: r.buyer_handle,
      verifiedPurchase: !r.refunded,
      paymentId: r.payment_id,
      purchaseTransaction: r.purchase_tx,
      version: r.post_version,
      revision: r.revision,
      rating: r.rating,
      text: r.text,
      issuedAt: r.issued_at.toISOString(),
      signature: r.signature,
      feedbackURI: `${v.baseUrl}/api/reviews/feedback/${r.feedback_hash}.json`,
      feedbackHash: r.feedback_hash,
      onChain: chainState(r, v.sellerOnChain),
      response: r.response_text ? { text: r.response_text, at: r.response_at?.toISOString() ?? null } : null,
    })),
  };
}

const example = renderSkillReviews({
  postId: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  rating: { count: 2, total: 9, distribution: [0, 0, 0, 1, 1] },
  reviews: [
    {
      id: '0b6f2c1e-5a4d-4e3b-9c8a-7d6e5f4a3b2c',
      buyer_address: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
      buyer_handle: 'tide-reader',
      payment_id: '2b7c4d1e-8f3a-4c5b-9d6e-7f8a9b0c1d2e',
      purchase_tx: `0x${'5e'.repeat(32)}`,
      post_version: 1,
      revision: 1,
      rating: 5,
      text: 'Exactly the tide tables I needed.',
      issued_at: new Date(EXAMPLE_TIME),
      signature: `0x${'ab'.repeat(65)}`,
      feedback_hash: `0x${'c4'.repeat(32)}`,
      refunded: false,
      response_text: 'Thank you!',
      response_at: new Date(EXAMPLE_TIME),
      chain_tx: `0x${'7a'.repeat(32)}`,
      chain_index: '1',
      chain_verification: 'verified',
      chain_revoked: false,
    },
  ],
  sellerOnChain: true,
  baseUrl: EXAMPLE_SITE.baseUrl,
});

const nullableNumber = { type: ['number', 'null'] };

/** The schema of a rating (ratingView). */
export const ratingSchema = object({
  count: integer,
  mean: nullableNumber,
  adjusted: nullableNumber,
  distribution: object({ '1': integer, '2': integer, '3': integer, '4': integer, '5': integer }),
  prior: object({ mean: integer, weight: integer }),
});

/** /api/posts/{postId}/reviews.json: a skill's rating and its verified buyers' reviews (docs/reputation.md). */
export const skillReviewsDocument = defineDocument({
  id: 'SkillReviews',
  path: '/api/posts/{postId}/reviews.json',
  contentType: JSON_TYPE,
  cache: { maxAge: 30, staleWhileRevalidate: 300 },
  schema: object({
    postId: string,
    rating: ratingSchema,
    reviews: {
      ...arrayOf(
        object({
          id: string,
          buyer: string,
          buyerHandle: nullable(string),
          verifiedPurchase: boolean,
          paymentId: string,
          purchaseTransaction: string,
          version: integer,
          revision: integer,
          rating: { type: 'integer', minimum: 1, maximum: 5 },
          text: { type: 'string', maxLength: 2000 },
          issuedAt: string,
          signature: string,
          feedbackURI: string,
          feedbackHash: string,
          onChain: object({
            status: { enum: ['verified', 'revoked', 'not_given', 'not_on_chain'] },
            txHash: nullable(string),
            feedbackIndex: nullable(integer),
          }),
          response: nullable(object({ text: string, at: nullable(string) })),
        }),
      ),
      maxItems: REVIEWS_LISTED,
    },
  }),
  examples: {
    valid: [example, { ...example, reviews: [] }],
    invalid: [
      { ...example, rating: undefined },
      { ...example, reviews: [{ ...example.reviews[0], rating: 6 }] },
    ],
  },
  render: renderSkillReviews,
});
