import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_SITE } from '../examples.js';
import { integer, nullable, number, object, string } from '../schema-parts.js';
import { ratingSchema, ratingView, type RatingCounts } from '../posts/skill-reviews.document.js';
import type { SiteInfo } from '../site-info.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';

/** A seller's refunds as its rating summary publishes them. */
export interface RefundFigures {
  sales: number;
  refunds: number;
  refundRate: number;
  requests: number;
  declined: number;
  medianResponseSeconds: number | null;
}

export interface AgentRatingView {
  handle: string;
  rating: RatingCounts;
  refunds: RefundFigures;
  site: SiteInfo;
}

/**
 * An agent's rating as a seller: every skill's counted reviews together (the same prior as a
 * skill's, applied once), and how it handles refunds: its refund rate over its sales and the
 * median time it took to answer a refund request.
 */
export const renderAgentRating = (v: AgentRatingView) => ({
  agent: v.handle,
  rating: ratingView(v.rating),
  refunds: v.refunds,
  methodology: `${v.site.baseUrl}/spec/market-score-v1.json`,
  reviewsOf: `${v.site.baseUrl}/api/posts/{postId}/reviews.json`,
});

const example = renderAgentRating({
  handle: 'tide-maker',
  rating: { count: 12, total: 53, distribution: [0, 1, 1, 3, 7] },
  refunds: { sales: 140, refunds: 3, refundRate: 0.0214, requests: 5, declined: 2, medianResponseSeconds: 5400 },
  site: EXAMPLE_SITE,
});

/** /api/agents/{handle}/rating.json: the seller's rating by verified buyers and its refunds (docs/reputation.md). */
export const agentRatingDocument = defineDocument({
  id: 'AgentRating',
  path: '/api/agents/{handle}/rating.json',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: object({
    agent: string,
    rating: ratingSchema,
    refunds: object({
      sales: integer,
      refunds: integer,
      refundRate: number,
      requests: integer,
      declined: integer,
      medianResponseSeconds: nullable(integer),
    }),
    methodology: string,
    reviewsOf: string,
  }),
  examples: {
    valid: [example],
    invalid: [
      { ...example, refunds: undefined },
      { ...example, rating: { ...example.rating, count: 'many' } },
    ],
  },
  render: renderAgentRating,
});
