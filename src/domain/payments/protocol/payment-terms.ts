import {
  requirementsV1,
  requirementsV2,
  v1NetworkName,
  type DecodedPayment,
  type FacilitatorRequest,
  type PaymentTerms,
} from './x402-codec.js';

/** Seconds a signed authorization must still be valid for when it reaches us (facilitators require 6). */
const MIN_VALIDITY_SECONDS = 6n;
/** The furthest expiry we accept: a day. Longer-lived authorizations are refused, not stored. */
const MAX_VALIDITY_SECONDS = 86_400n;

/** Why a payment does not meet a resource's terms: an x402 error code and a sentence for the payer. */
export interface TermsMismatch {
  reason: string;
  detail: string;
}

/**
 * Checks the signed authorization against our terms before any facilitator or database work.
 * `nowMs` is the clock the validity window is read on.
 */
export function checkTerms(d: DecodedPayment, t: PaymentTerms, nowMs = Date.now()): TermsMismatch | undefined {
  const expectedNetwork = d.version === 2 ? `eip155:${t.chainId}` : v1NetworkName(t.chainId);
  if (d.scheme !== 'exact')
    return { reason: 'unsupported_scheme', detail: `Only the "exact" scheme is accepted, not "${d.scheme}"` };
  if (d.network !== expectedNetwork) {
    return {
      reason: 'invalid_exact_evm_network_mismatch',
      detail: `This resource is paid on ${expectedNetwork}, not ${d.network}`,
    };
  }
  if (d.asset && d.asset.toLowerCase() !== t.asset.address.toLowerCase()) {
    return {
      reason: 'invalid_exact_evm_asset_mismatch',
      detail: `This resource is paid in ${t.asset.address}, not ${d.asset}`,
    };
  }
  const a = d.authorization;
  if (a.to.toLowerCase() !== t.payTo.toLowerCase()) {
    return {
      reason: 'invalid_exact_evm_recipient_mismatch',
      detail: `The authorization pays ${a.to}; this resource is paid to ${t.payTo}`,
    };
  }
  if (a.value !== t.amountAtomic) {
    return {
      reason: 'invalid_exact_evm_payload_authorization_value_mismatch',
      detail: `The authorization is for ${a.value} atomic units; the price is exactly ${t.amountAtomic}`,
    };
  }
  const now = BigInt(Math.floor(nowMs / 1000));
  if (a.validBefore > now + MAX_VALIDITY_SECONDS) {
    return {
      reason: 'invalid_exact_evm_payload_authorization_valid_before',
      detail: `The authorization must expire within ${MAX_VALIDITY_SECONDS} seconds`,
    };
  }
  if (a.validBefore < now + MIN_VALIDITY_SECONDS) {
    return { reason: 'invalid_exact_evm_payload_authorization_valid_before', detail: 'The authorization has expired' };
  }
  if (a.validAfter > now) {
    return {
      reason: 'invalid_exact_evm_payload_authorization_valid_after',
      detail: 'The authorization is not valid yet',
    };
  }
  return undefined;
}

/**
 * The payment as a facilitator takes it: the decoded payload with our requirements of the same
 * protocol version. A v1 payment for a chain without a v1 network name has none (`checkTerms`
 * refuses it first, as a network mismatch).
 */
export function facilitatorRequestFor(d: DecodedPayment, t: PaymentTerms): FacilitatorRequest | undefined {
  if (d.version === 2) return { x402Version: 2, payload: d.payload, requirements: requirementsV2(t) };
  const requirements = requirementsV1(t);
  return requirements && { x402Version: 1, payload: d.payload, requirements };
}

/**
 * The terms check and the facilitator request together: what a paid request may go on with,
 * or why it may not.
 */
export function acceptPayment(
  d: DecodedPayment,
  t: PaymentTerms,
  nowMs = Date.now(),
): { ok: true; request: FacilitatorRequest } | { ok: false; mismatch: TermsMismatch } {
  const mismatch = checkTerms(d, t, nowMs);
  if (mismatch) return { ok: false, mismatch };
  const request = facilitatorRequestFor(d, t);
  if (!request) {
    return {
      ok: false,
      mismatch: { reason: 'invalid_exact_evm_network_mismatch', detail: 'This resource takes no x402 v1 payment' },
    };
  }
  return { ok: true, request };
}
