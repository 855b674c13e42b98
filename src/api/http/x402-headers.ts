import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http';
import type { SettleResponse } from '@x402/core/types';
import type { Challenge, SentPayment } from '../../domain/payments/protocol/x402-codec.js';

/**
 * The x402 HTTP transport of both protocol versions: v1 (`X-PAYMENT`, the 402 JSON body,
 * `X-PAYMENT-RESPONSE`) and v2 (`PAYMENT-SIGNATURE`, base64 `PAYMENT-REQUIRED`,
 * `PAYMENT-RESPONSE`). One 402 answer carries both: the v2 challenge in its header, the v1 one in
 * its body. The paywall sees none of it: it takes and gives the messages as objects.
 */
export const HEADER_V1 = 'x-payment';
export const HEADER_V2 = 'payment-signature';
export const RESPONSE_HEADER_V1 = 'X-PAYMENT-RESPONSE';
export const RESPONSE_HEADER_V2 = 'PAYMENT-RESPONSE';
export const REQUIRED_HEADER_V2 = 'PAYMENT-REQUIRED';

/** The payment in `PAYMENT-SIGNATURE` (v2, preferred) or `X-PAYMENT` (v1); undefined when neither is sent. */
export function paymentOfHeaders(headers: { v1?: string; v2?: string }): SentPayment | undefined {
  if (headers.v2) {
    try {
      return { version: 2, payload: decodePaymentSignatureHeader(headers.v2), via: 'PAYMENT-SIGNATURE' };
    } catch (err) {
      return { unreadable: `PAYMENT-SIGNATURE is not base64 JSON: ${messageOf(err)}` };
    }
  }
  if (headers.v1) {
    try {
      return { version: 1, payload: JSON.parse(strictBase64(headers.v1)), via: 'X-PAYMENT' };
    } catch (err) {
      return { unreadable: `X-PAYMENT is not an x402 v1 payment payload: ${messageOf(err).slice(0, 200)}` };
    }
  }
  return undefined;
}

/** The `PAYMENT-REQUIRED` header of a challenge: its v2 PaymentRequired in base64. */
export const challengeHeader = (challenge: Challenge): [string, string] => [
  REQUIRED_HEADER_V2,
  encodePaymentRequiredHeader(challenge.v2),
];

/**
 * The settlement response header of the version the client paid with. Both versions send the
 * receipt as base64 JSON; it names the network as recorded (CAIP-2) for either.
 */
export function settlementHeader(version: 1 | 2, settle: SettleResponse): [string, string] {
  return [version === 2 ? RESPONSE_HEADER_V2 : RESPONSE_HEADER_V1, encodePaymentResponseHeader(settle)];
}

/** Base64 text as UTF-8, refusing what is not base64 (as the x402 v1 client's own decoder does). */
function strictBase64(text: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(text), (c) => c.charCodeAt(0)));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
