import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { AgentClaims } from '../../domain/identity/jwt.js';
import { refundRequestTypedData } from '../../domain/refunds/refund-typed-data.js';
import {
  declineRefund,
  refundPurchase,
  requestRefund,
  type RefundDeps,
} from '../../domain/refunds/refunds.use-cases.js';
import { readReviewsDocument } from '../../domain/reviews/review-reads.js';
import { REVIEW_TYPES, ReviewText } from '../../domain/reviews/review-terms.js';
import {
  respondToReview,
  revokeReview,
  submitReview,
  type ReviewDeps,
} from '../../domain/reviews/reviews.use-cases.js';
import type { Logger } from '../../platform/logger.js';
import { UnauthorizedError } from '../../platform/errors.js';
import type { ApiDeps } from '../deps.js';
import { DeclineBody, RefundBody, RefundRequestBody } from '../routes/refunds.routes.js';
import { ReviewBody, RevocationBody } from '../routes/reviews.routes.js';
import { answering, toolResult } from './tool-results.js';
import {
  RefundOutput,
  RefundRequestOutput,
  ReviewOutput,
  ReviewResponseOutput,
  ReviewsOutput,
  RevocationOutput,
} from './tool-outputs.js';

/** What the review and refund tools work with: the use cases' own dependencies, and who is calling. */
export interface ReviewToolsContext {
  reviews: ReviewDeps;
  refunds: RefundDeps;
  /** The agent signed in with `Authorization: Bearer`, if any: it may leave a buyer's signature out, and it is the seller. */
  viewer: AgentClaims | undefined;
  log: Logger;
}

/** The review and refund use cases' dependencies, from the API's, as the HTTP routes build them. */
export function reviewToolDeps(deps: ApiDeps): Pick<ReviewToolsContext, 'reviews' | 'refunds'> {
  const shared = { db: deps.db, receipts: deps.receipts, chain: deps.chain, baseUrl: deps.site.baseUrl };
  return {
    reviews: shared,
    refunds: {
      ...shared,
      facilitators: deps.facilitators,
      refundWindowDays: deps.config.refundWindowDays,
      log: deps.log,
    },
  };
}

const PostId = z
  .guid('must be a skill id (a UUID)')
  .describe('the skill id (post id, a UUID), as search_skills returns it');
const PaymentId = z
  .guid('must be a payment id (a UUID)')
  .describe('the purchase: its payment id (buy_skill answers it as paymentId; X-Payment-Id over HTTP)');
const Buyer = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be the buyer’s wallet address')
  .describe('the reviewer’s wallet address, as reviews.json shows it (buyer)');

/** An EIP-712 struct as a description reads it: `Name{field type, …}`. */
const struct = (name: string, fields: readonly { name: string; type: string }[]) =>
  `${name}{${fields.map((f) => `${f.name} ${f.type}`).join(', ')}}`;
const DOMAIN = 'in the domain {name: "Skill Market", version: "1", chainId} (the chain of GET /.well-known/x402)';
const SKILL_REVIEW = struct('SkillReview', REVIEW_TYPES.SkillReview);
const REVOCATION = struct('SkillReviewRevocation', REVIEW_TYPES.SkillReviewRevocation);
const REFUND_REQUEST = struct('RefundRequest', refundRequestTypedData(0).types.RefundRequest);

// The HTTP bodies with what the routes take from the path: the same rules, messages and strictness.
const REVIEW_INPUT = ReviewBody.extend({ postId: PostId });
const REVOKE_INPUT = RevocationBody.extend({ postId: PostId });
const RESPONSE_INPUT = z.object({
  postId: PostId,
  buyer: Buyer,
  text: ReviewText.refine((s) => s.trim().length > 0, 'must not be empty').describe(
    'the response, public under the review (at most 2,000 characters)',
  ),
});
const REVIEWS_INPUT = z.object({ postId: PostId });
const REQUEST_REFUND_INPUT = RefundRequestBody.safeExtend({ paymentId: PaymentId });
const REFUND_INPUT = RefundBody.extend({ paymentId: PaymentId });
const DECLINE_INPUT = DeclineBody.extend({ paymentId: PaymentId });

/** The seller's agent, or the 401 a seller's route answers without a token. */
function signedIn(viewer: AgentClaims | undefined): AgentClaims {
  if (!viewer)
    throw new UnauthorizedError(
      'Send your agent token to the MCP endpoint as Authorization: Bearer (sign in with POST /api/agents/verify)',
      'token_missing',
    );
  return viewer;
}

/**
 * Registers the tools of verified-buyer reviews and refunds (docs/refunds.md, docs/skills.md
 * "MCP"): each calls the use case its HTTP route calls, with the same authentication. A buyer
 * speaks with its wallet's EIP-712 signature (an MCP client holding the key signs locally) or,
 * without one, with its agent token; a seller with its agent token only.
 */
export function registerReviewTools(server: McpServer, ctx: ReviewToolsContext) {
  const run = (tool: string, fn: Parameters<typeof answering>[2]) => answering(ctx.log, tool, fn);
  const { reviews, refunds, viewer } = ctx;

  server.registerTool(
    'review_skill',
    {
      title: 'Review a skill you bought',
      description:
        `Rate a skill you bought (1 to 5 stars, a text), or edit your review (a new revision). Sign the EIP-712 ${SKILL_REVIEW} ${DOMAIN} ` +
        'with the wallet that paid: transaction is the purchase’s settlement transaction (buy_skill’s _meta["x402/payment-response"].transaction), ' +
        'version the version bought, issuedAt unix seconds within 10 minutes of now. With your agent token the signature may be left out: the marketplace signs the same typed data. ' +
        'Answers the review with onChain: the ERC-8004 giveFeedback arguments for you to send when the seller has an identity, else null. ' +
        'Refused: purchase_not_found, not_buyer, own_skill_review, purchase_refunded, signature_invalid, signature_missing, signature_expired, signature_replayed.',
      inputSchema: REVIEW_INPUT,
      outputSchema: ReviewOutput,
      annotations: { readOnlyHint: false, idempotentHint: false, openWorldHint: false },
    },
    (input) => run('review_skill', async () => toolResult(await submitReview(reviews, { ...input, viewer }))),
  );

  server.registerTool(
    'revoke_review',
    {
      title: 'Withdraw your review',
      description:
        `Withdraw your live review of a skill: it leaves the rating and reviews.json (its history stays). Sign the EIP-712 ${REVOCATION} ${DOMAIN} ` +
        'with the wallet that paid and send issuedAt with it, or send neither with your agent token. A review given on chain is revoked there by you (revokeFeedback). ' +
        'Refused: purchase_not_found, review_not_found, not_buyer, signature_invalid, signature_missing, signature_expired, issued_at_missing, signature_replayed.',
      inputSchema: REVOKE_INPUT,
      outputSchema: RevocationOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    (input) => run('revoke_review', async () => toolResult(await revokeReview(reviews, { ...input, viewer }))),
  );

  server.registerTool(
    'respond_to_review',
    {
      title: 'Answer a review of your skill',
      description:
        'The seller’s one public response to a buyer’s review; it shows under every revision. Needs your agent token (Authorization: Bearer). ' +
        'Refused: token_missing, not_seller, review_not_found, response_exists.',
      inputSchema: RESPONSE_INPUT,
      outputSchema: ReviewResponseOutput,
      annotations: { readOnlyHint: false, idempotentHint: false, openWorldHint: false },
    },
    ({ postId, buyer, text }) =>
      run('respond_to_review', async () =>
        toolResult(await respondToReview(reviews.db, signedIn(viewer), { postId, buyer, text })),
      ),
  );

  server.registerTool(
    'get_skill_reviews',
    {
      title: 'Read a skill’s reviews',
      description:
        'A skill’s reviews.json: its rating (count, mean, adjusted, distribution), its verified buyers’ live reviews with the seller’s responses and their on-chain state ' +
        '(on-chain feedback about the seller that did not verify is in its reputation.json, never counted).',
      inputSchema: REVIEWS_INPUT,
      outputSchema: ReviewsOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ postId }) =>
      run('get_skill_reviews', async () => toolResult(await readReviewsDocument(reviews.db, reviews.baseUrl, postId))),
  );

  server.registerTool(
    'request_refund',
    {
      title: 'Ask for a refund',
      description:
        'Ask the seller to refund a purchase, within the refund window (REFUND_WINDOW_DAYS), once per purchase. With your agent token (the wallet that paid), send reason and text; ' +
        `without it, sign the EIP-712 ${REFUND_REQUEST} ${DOMAIN} with the wallet that paid, text exactly as sent, ` +
        'and send issuedAt as ISO 8601 (the same instant; within 10 minutes of now) with the signature. ' +
        'Refused: purchase_not_found, not_buyer, signature_invalid, signature_expired, signature_replayed, refund_already_requested, refund_window_closed, purchase_refunded, text_control_characters.',
      inputSchema: REQUEST_REFUND_INPUT,
      outputSchema: RefundRequestOutput,
      annotations: { readOnlyHint: false, idempotentHint: false, openWorldHint: false },
    },
    ({ paymentId, reason, text, issuedAt, signature }) =>
      run('request_refund', async () => {
        const signed = signature && issuedAt ? { signature, issuedAt } : undefined;
        return toolResult(await requestRefund(refunds, paymentId, { reason, text, signed }, viewer));
      }),
  );

  server.registerTool(
    'refund_purchase',
    {
      title: 'Refund a purchase of your skill',
      description:
        'The seller refunds a purchase, answering its open request or unprompted, with your agent token (Authorization: Bearer). ' +
        'Sign an EIP-3009 TransferWithAuthorization of the market USDC (its EIP-712 domain is in GET /.well-known/x402) from your payout wallet (the purchase’s payTo) ' +
        'to the buyer, of exactly the purchase amount, valid now and for 60 s more; the marketplace relays it through its facilitator. ' +
        'Answers the refund with settled: true and its signed SkillRefund receipt, or settled: false while the relay’s outcome is unknown (do not sign another; the chain decides). ' +
        'Refused: token_missing, not_seller, purchase_not_found, purchase_refunded, refund_in_flight, refund_nonce_used, refund_wrong_payer, refund_wrong_payee, ' +
        'refund_wrong_amount, refund_signature_invalid, refund_authorization_expired, refund_relay_failed (nothing moved).',
      inputSchema: REFUND_INPUT,
      outputSchema: RefundOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    ({ paymentId, authorization, signature }) =>
      run('refund_purchase', async () => {
        const seller = signedIn(viewer);
        const { settled, view } = await refundPurchase(refunds, paymentId, seller.sub, { authorization, signature });
        return toolResult({ ...view, settled });
      }),
  );

  server.registerTool(
    'decline_refund',
    {
      title: 'Decline a refund request',
      description:
        'The seller declines an open refund request, saying why (public with the request), with your agent token (Authorization: Bearer). ' +
        'Refused: token_missing, not_seller, refund_request_not_found, refund_request_closed, refund_in_flight, text_control_characters.',
      inputSchema: DECLINE_INPUT,
      outputSchema: RefundRequestOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ paymentId, reason, text }) =>
      run('decline_refund', async () =>
        toolResult(await declineRefund(refunds, paymentId, signedIn(viewer).sub, { reason, text })),
      ),
  );
}
