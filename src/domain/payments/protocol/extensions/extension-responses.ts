import { PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import type { Payment } from '../../../../data/schema.js';
import type { SettleResponse } from '@x402/core/types';
import { OFFER_RECEIPT } from './offer-receipt.js';

/**
 * `EXTENSION-RESPONSES`: base64 JSON keyed by extension name, each value an outcome
 * `{status: "success" | "processing" | "rejected", rejectedReason?}`. x402 defines it in
 * specs/extensions/bazaar.md ("Verify and Settlement Response Header") as what a facilitator MAY
 * append to its verify or settle answer; @x402/core's resource server reads it into
 * `extensionResponses` and keeps it out of the buyer's PAYMENT-RESPONSE. Here the resource server
 * and the facilitator are one service, so a paid answer states it to the buyer itself, in that
 * format, for the extensions the payment used, and with a refusal an extension caused.
 */
export const EXTENSION_RESPONSES_HEADER = 'EXTENSION-RESPONSES';

export interface ExtensionOutcome {
  status: 'success' | 'processing' | 'rejected';
  rejectedReason?: string;
}

/**
 * The outcome of each extension of a settled payment, or undefined when the extensions are off
 * (no receipt in the settlement, X402_EXTENSIONS=false). Read from what the paywall already holds:
 * nothing is looked up on the paid path.
 * - `bazaar`: every paid resource is in this service's catalogue (`/discovery/resources`) with
 *   the declaration its 402 carried, from its publication on;
 * - `offer-receipt`: the settlement carries a signed receipt;
 * - `payment-identifier`: the payment's identifier is recorded; a retry with it is answered as
 *   this request was.
 * `sign-in-with-x` has no outcome on a paid answer: a proof is answered without payment.
 */
export function extensionOutcomes(
  payment: Pick<Payment, 'payment_identifier'>,
  settlement: SettleResponse,
): Record<string, ExtensionOutcome> | undefined {
  const receipt = (settlement.extensions?.[OFFER_RECEIPT] as { info?: { receipt?: unknown } } | undefined)?.info
    ?.receipt;
  if (receipt === undefined) return undefined;
  return {
    bazaar: { status: 'success' },
    [OFFER_RECEIPT]: { status: 'success' },
    ...(payment.payment_identifier ? { [PAYMENT_IDENTIFIER]: { status: 'success' as const } } : {}),
  };
}

/**
 * The outcome stated with a refusal that one extension caused: a payment-identifier sent with
 * another payment (409 `payment_identifier_conflict`) is that extension's rejection.
 */
export function refusalOutcomes(code: string): Record<string, ExtensionOutcome> | undefined {
  return code === 'payment_identifier_conflict'
    ? { [PAYMENT_IDENTIFIER]: { status: 'rejected', rejectedReason: code } }
    : undefined;
}

/** The header value of outcomes: base64 of their JSON. */
export const encodeExtensionResponses = (outcomes: Record<string, ExtensionOutcome>): string =>
  Buffer.from(JSON.stringify(outcomes)).toString('base64');
