import { z } from 'zod';
import { ProblemSchema, PROBLEM_CONTENT_TYPE } from '../http/problem.js';
import type { PaymentPrice } from '../http/route.js';

/** The x402 v1 requirements in a 402 body (v2 states the same in PAYMENT-REQUIRED). */
const RequirementsV1 = z
  .object({
    scheme: z.string(),
    network: z.string(),
    maxAmountRequired: z.string().describe('atomic units of the asset'),
    resource: z.string(),
    description: z.string(),
    mimeType: z.string(),
    payTo: z.string(),
    maxTimeoutSeconds: z.number(),
    asset: z.string(),
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

/** The body of a 402: the x402 v1 challenge and RFC 9457 problem details in one object. */
export const PaymentRequiredBody = ProblemSchema.extend({
  x402Version: z.literal(1),
  error: z.string().describe('why the payment is required or was refused (also `code`)'),
  accepts: z.array(RequirementsV1),
  paymentId: z.string().optional().describe('the payment the refused attempt created, when one was'),
  paymentUrl: z.string().optional(),
}).describe('x402 v1 challenge merged with problem details');

/** The headers on the 200 of a paid operation. */
export const PAID_HEADERS = {
  'X-Payment-Id': 'the payment this answer was paid with (GET /api/payments/{id}, and its receipt)',
  'PAYMENT-RESPONSE': 'x402 v2 SettlementResponse, base64 JSON (with the signed offer-receipt in its extensions)',
  'X-PAYMENT-RESPONSE': 'x402 v1 settlement response, base64 JSON',
  'EXTENSION-RESPONSES':
    "each x402 extension's outcome, base64 JSON keyed by extension (bazaar, offer-receipt, payment-identifier): {status: success | processing | rejected, rejectedReason?}; absent when the extensions are off",
};

/** The documented responses every x402-paid operation shares. */
export const X402_RESPONSES = {
  402: {
    description:
      'Payment Required (x402). Body: x402 v1 challenge `{x402Version:1, error, accepts}` merged with problem details; header PAYMENT-REQUIRED: x402 v2 challenge (base64). `code` names why the last attempt was refused.',
    schema: PaymentRequiredBody,
    contentType: PROBLEM_CONTENT_TYPE,
    headers: {
      'PAYMENT-REQUIRED':
        'x402 v2 PaymentRequired `{x402Version: 2, error, resource, accepts, extensions}`, base64 JSON',
      'X-Payment-Id': 'the payment this attempt created, when one was',
    },
  },
  409: {
    description:
      'A copy of a payment still being settled for the request that sent it first (payment_in_progress: nothing is delivered to a copy; read again once settled with Sign-In-With-X or an agent token), or a payment-identifier sent with another payment (payment_identifier_conflict); a registration also when its handle or wallet is taken (handle_taken, wallet_registered)',
  },
  503: {
    description: 'No facilitator is available; nothing was charged (Retry-After)',
    headers: { 'Retry-After': 'seconds' },
  },
};

/** Atomic USDC units (6 decimals) as a USD amount with at least two decimals: 1000000 → "1.00". */
export function usd(atomic: bigint): string {
  const whole = atomic / 1_000_000n;
  const fraction = (atomic % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${whole}.${fraction}`;
}

/** A fixed price of `atomic` USDC units. */
export const fixedPrice = (atomic: bigint): PaymentPrice => ({ mode: 'fixed', amount: usd(atomic) });

/** A price set per resource, between `min` and `max` USDC units. */
export const dynamicPrice = (min: bigint, max: bigint): PaymentPrice => ({
  mode: 'dynamic',
  min: usd(min),
  max: usd(max),
});
