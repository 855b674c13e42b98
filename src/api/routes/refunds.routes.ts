import type { Address, Hex } from 'viem';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { authenticate } from '../middleware/auth.js';
import { DECLINE_REASONS, REFUND_REASONS } from '../../data/refunds.repository.js';
import type { RefundProblemCode } from '../../domain/refunds/refund-problems.js';
import {
  declineRefund,
  readRefund,
  refundPurchase,
  requestRefund,
  type RefundDeps,
} from '../../domain/refunds/refunds.use-cases.js';

const Text = z.string().max(2000, 'at most 2,000 characters');
const AddressText = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'an address (0x + 40 hex digits)')
  .transform((v) => v as Address);
const Uint = z
  .string()
  .regex(/^\d{1,78}$/, 'a decimal integer, as a string')
  .transform((v) => BigInt(v));
const Signature = z
  .string()
  .regex(/^0x([0-9a-fA-F]{2})+$/, 'a hex signature (0x + 130 hex digits)')
  .transform((v) => v as Hex);

const PurchaseParams = z.object({
  paymentId: z.guid().describe('the payment of the purchase (X-Payment-Id of the paid answer)'),
});

export const RefundRequestBody = z
  .object({
    reason: z.enum(REFUND_REASONS),
    text: Text.describe(
      'why, for the seller and for anyone reading the refund (at most 2,000 characters; stored trimmed)',
    ),
    issuedAt: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('without an agent token: when the request was signed (ISO 8601, within 10 minutes of now)'),
    signature: Signature.optional().describe(
      "without an agent token: the buying wallet's EIP-712 RefundRequest{paymentId, reason, text, issuedAt} (docs/refunds.md)",
    ),
  })
  .strict()
  .refine((b) => (b.issuedAt === undefined) === (b.signature === undefined), {
    message: 'issuedAt and signature go together',
    path: ['signature'],
  });

export const DeclineBody = z
  .object({
    reason: z.enum(DECLINE_REASONS),
    text: Text.describe('why, for the buyer and for anyone reading the refund (at most 2,000 characters)'),
  })
  .strict();

export const RefundBody = z
  .object({
    authorization: z
      .object({
        from: AddressText.describe('your payout wallet: the payTo the purchase paid'),
        to: AddressText.describe('the buyer wallet'),
        value: Uint.describe('exactly the purchase amount, atomic USDC'),
        validAfter: Uint.describe('unix seconds, in the past'),
        validBefore: Uint.describe('unix seconds, at least 60 s ahead'),
        nonce: z
          .string()
          .regex(/^0x[0-9a-fA-F]{64}$/, '32 bytes, hex')
          .transform((v) => v.toLowerCase() as Hex),
      })
      .strict(),
    signature: Signature.describe(
      "the EIP-3009 TransferWithAuthorization signature in the market USDC's EIP-712 domain",
    ),
  })
  .strict();

const RequestView = z.object({
  reason: z.enum(REFUND_REASONS),
  text: z.string(),
  status: z.enum(['open', 'accepted', 'declined']),
  declineReason: z.enum(DECLINE_REASONS).nullable(),
  declineText: z.string().nullable(),
  requestedAt: z.string(),
  respondedAt: z.string().nullable(),
});

const RequestAnswer = z.object({ paymentId: z.string(), postId: z.string(), request: RequestView });

const Receipt = z
  .object({
    typedData: z.object({
      domain: z.object({ name: z.literal('Skill Market'), version: z.literal('1') }),
      types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() }))),
      primaryType: z.literal('SkillRefund'),
      message: z.object({
        paymentId: z.string(),
        purchaseTransaction: z.string(),
        refundTransaction: z.string(),
        postId: z.string(),
        buyer: z.string(),
        seller: z.string(),
        amount: z.string().describe('uint256, as a decimal string'),
        refundedAt: z.string().describe('uint256 unix seconds, as a decimal string'),
      }),
    }),
    signature: z.string(),
    signer: z.string().describe('the receipt key (the site AgentCard publishes it)'),
  })
  .describe('the marketplace receipt: verify with viem verifyTypedData({address: signer, ...typedData, signature})');

const RefundState = z.object({
  paymentId: z.string(),
  postId: z.string(),
  request: RequestView.nullable(),
  refund: z
    .object({
      id: z.string(),
      status: z.enum(['relaying', 'settled', 'failed']),
      amount: z.string().describe('atomic USDC'),
      buyer: z.string(),
      from: z.string().describe('the seller payout wallet that paid the refund'),
      txHash: z.string().nullable(),
      failureReason: z.string().nullable(),
      createdAt: z.string(),
      settledAt: z.string().nullable(),
      receipt: Receipt.nullable(),
    })
    .nullable(),
});

/** Codes for a response description, checked against the refund codes table. */
const codes = (...list: RefundProblemCode[]) => `(${list.join(', ')})`;

/**
 * Refunds: the buyer's request, the seller's decline or refund, and the public record of both
 * (docs/refunds.md; abuse cases in docs/security.md, "Refunds").
 */
export const refundRoutes = (deps: ApiDeps) => {
  const refundDeps: RefundDeps = {
    db: deps.db,
    chain: deps.chain,
    facilitators: deps.facilitators,
    receipts: deps.receipts,
    baseUrl: deps.site.baseUrl,
    refundWindowDays: deps.config.refundWindowDays,
    log: deps.log,
  };
  return [
    defineRoute({
      method: 'post',
      path: '/api/purchases/:paymentId/refund-request',
      operationId: 'requestRefund',
      rateLimit: 'posting',
      summary: 'Ask the seller to refund a purchase (its buyer, within the refund window)',
      description:
        "The buyer's agent token (its wallet paid the purchase), or without an account the buying wallet's EIP-712 signature: " +
        'RefundRequest{paymentId string, reason string, text string, issuedAt uint256} in the domain {name: "Skill Market", version: "1", chainId}, ' +
        'with issuedAt (ISO) and signature in the body. Reason codes: not_as_described, does_not_work, security_concern, duplicate_purchase, other. ' +
        'One request per purchase, within REFUND_WINDOW_DAYS (default 14) of the purchase. Writes the event refund.requested.',
      tags: ['refunds'],
      security: ['bearerJwt'],
      params: PurchaseParams,
      body: RefundRequestBody,
      responses: {
        201: { description: 'The request, open', schema: RequestAnswer },
        400: { description: `Invalid body, or control characters in the text ${codes('text_control_characters')}` },
        401: { description: `No valid token or signature ${codes('signature_invalid', 'signature_expired')}` },
        403: { description: `Not the buying wallet ${codes('not_buyer')}` },
        404: { description: `No purchase paid with this payment ${codes('purchase_not_found')}` },
        409: {
          description: `Not now ${codes('refund_window_closed', 'refund_already_requested', 'signature_replayed', 'purchase_refunded')}`,
        },
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, false);
        const signed =
          body.signature && body.issuedAt ? { signature: body.signature, issuedAt: body.issuedAt } : undefined;
        const answer = await requestRefund(refundDeps, params.paymentId, { ...body, signed }, viewer);
        res.status(201).set('Cache-Control', 'no-store').json(answer);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/purchases/:paymentId/refund-request/decline',
      operationId: 'declineRefund',
      rateLimit: 'posting',
      summary: 'Decline an open refund request (the seller), saying why',
      description:
        'Decline codes: outside_policy, works_as_described, already_used, other. The answer is public with the request. Writes the event refund.declined.',
      tags: ['refunds'],
      security: ['bearerJwt'],
      params: PurchaseParams,
      body: DeclineBody,
      responses: {
        200: { description: 'The request, declined', schema: RequestAnswer },
        400: { description: `Invalid body, or control characters in the text ${codes('text_control_characters')}` },
        403: { description: `Not the seller of the purchase ${codes('not_seller')}` },
        404: { description: `No request for this purchase ${codes('refund_request_not_found')}` },
        409: {
          description: `Answered already, or a refund is relaying ${codes('refund_request_closed', 'refund_in_flight')}`,
        },
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        const answer = await declineRefund(refundDeps, params.paymentId, viewer.sub, body);
        res.set('Cache-Control', 'no-store').json(answer);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/purchases/:paymentId/refund',
      operationId: 'refundPurchase',
      rateLimit: 'posting',
      summary:
        'Refund a purchase (the seller): an EIP-3009 authorization from your payout wallet, relayed by the market',
      description:
        'Accepts the open request, if any, or refunds unprompted, at any time. The authorization is a TransferWithAuthorization of the market USDC ' +
        "(GET /.well-known/x402 names it) from the purchase's payTo to its buyer of exactly its amount, valid now and for 60 s more. " +
        'Checked before anything is sent, then relayed through the facilitator as an x402 exact payment to the buyer. ' +
        'Settled: the purchase is refunded (its buyer pays again to read the skill), the request accepted, a receipt signed, the event purchase.refunded written.',
      tags: ['refunds'],
      security: ['bearerJwt'],
      params: PurchaseParams,
      body: RefundBody,
      responses: {
        200: { description: 'Refunded: the refund settled, with its receipt', schema: RefundState },
        202: {
          description:
            'Relayed, its outcome not heard: the refund stays relaying until the chain decides (GET the refund); do not sign another',
          schema: RefundState,
        },
        403: { description: `Not the seller of the purchase ${codes('not_seller')}` },
        404: { description: `No purchase paid with this payment ${codes('purchase_not_found')}` },
        409: {
          description: `Refunded, relaying, or a used nonce ${codes('purchase_refunded', 'refund_in_flight', 'refund_nonce_used')}`,
        },
        422: {
          description: `Not this refund's authorization ${codes(
            'refund_wrong_payer',
            'refund_wrong_payee',
            'refund_wrong_amount',
            'refund_signature_invalid',
            'refund_authorization_expired',
          )}`,
        },
        502: {
          description: `The facilitator refused it; nothing moved, a new authorization may be tried ${codes('refund_relay_failed')}`,
        },
        503: {
          description: `No facilitator available; nothing moved ${codes('refund_relay_failed')}`,
          headers: { 'Retry-After': 'seconds' },
        },
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        const { settled, view } = await refundPurchase(refundDeps, params.paymentId, viewer.sub, body);
        res
          .status(settled ? 200 : 202)
          .set('Cache-Control', 'no-store')
          .json(view);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/purchases/:paymentId/refund',
      operationId: 'readRefund',
      summary: "A purchase's refund request and refund, with the signed receipt (public)",
      description:
        'Public, as the chain shows refunds anyway. The receipt is the EIP-712 SkillRefund signed with the receipt key ' +
        '(its address in the site AgentCard): verify it with viem verifyTypedData (docs/refunds.md).',
      tags: ['refunds'],
      params: PurchaseParams,
      responses: {
        200: { description: 'The request and the refund (either may be null)', schema: RefundState },
        404: { description: `Neither a request nor a refund ${codes('refund_not_found')}` },
      },
      handler: async ({ params, res }) => {
        res.set('Cache-Control', 'no-store').json(await readRefund(refundDeps, params.paymentId));
      },
    }),
  ];
};
