import type { Payment } from '../../../data/schema.js';
import type { NewPayment } from '../../../data/payments.repository.js';
import { challengeExtensions } from '../protocol/extensions/declare.js';
import type { ResourceListing } from '../protocol/extensions/bazaar.js';
import {
  challengeFor,
  decodePaymentHeader,
  PaymentHeaderError,
  type Challenge,
  type DecodedPayment,
  type FacilitatorRequest,
  type PaymentTerms,
} from '../protocol/x402-codec.js';

/** A resource behind the paywall. The paywall never sees HTTP objects. */
export interface PaidResource<Prepared> {
  purpose: Payment['purpose'];
  terms: PaymentTerms;
  postId?: string;
  registration?: { handle: string; wallet: string };
  /**
   * Runs after the authorization is claimed and before it is settled (cheap checks, loading what
   * is sold); throwing refuses without charging. `payment` is the claimed (or, for a repeat, the
   * settled) payment.
   */
  prepare(payment: Payment): Promise<Prepared>;
  /**
   * What is sold, when the request knows it before any payment is claimed (no check needs the
   * claimed payment): the paywall may then claim the payment already `settling` beside a
   * facilitator's own checks, instead of claiming it before them. `prepare` serves the replays.
   */
  sold?: Prepared;
  /**
   * What the settled payment is recorded as having bought, from what was prepared for it: the
   * version of a skill the buyer is served (a seller's newer version may be published meanwhile).
   */
  recordAs?(prepared: Prepared): { postVersion?: number };
  /** The response body for a settled payment: the first time, and again for a replay of the same header. */
  render(payment: Payment, prepared: Prepared): Promise<unknown>;
  /**
   * Whether a request that repeats an already settled payment may get its answer again. Settling
   * publishes the signed authorization on chain, so repeating it proves nothing by itself: only a
   * resource that can tell the payer apart (a registration's signed-in wallet) says yes.
   */
  mayRedeliver?(payment: Payment): boolean;
  /**
   * How the resource presents itself to x402 discovery (service metadata and the `bazaar`
   * declaration), stated in each of its 402s. A function, so a paid request that never answers
   * 402 does not build it.
   */
  listing?(): ResourceListing;
}

export type PaywallOutcome =
  | { kind: 'challenge'; reason: string; detail: string; challenge: Challenge; paymentId?: string }
  | { kind: 'paid'; body: unknown; payment: Payment; header: [string, string]; replay: boolean }
  | { kind: 'pending'; payment: Payment; challenge: Challenge };

export interface PaywallTimings {
  facilitatorMs: number;
}

/** A 402 answer: why the payment was refused, and the payment it concerns when one was recorded. */
export type Refuse = (reason: string, detail: string, paymentId?: string) => PaywallOutcome;

/** A step either goes on with a value or ends the request with an answer. */
export type Step<T> = { next: T } | { answer: PaywallOutcome };

/** The 402 challenge of a resource, with its listing and every extension it declares. */
export function challengeOf<P>(
  resource: PaidResource<P>,
  reason: string,
  extra: { paymentId?: string; receipts?: { kid: string } } = {},
): Challenge {
  const { terms } = resource;
  // Without a receipt signer the extensions are off: a plain x402 challenge.
  const ext =
    extra.receipts &&
    challengeExtensions({
      resourceUrl: terms.resourceUrl,
      chainId: terms.chainId,
      listing: resource.listing?.(),
      receiptKid: extra.receipts.kid,
    });
  return challengeFor(terms, reason, extra.paymentId ? { paymentId: extra.paymentId } : {}, ext);
}

/** The 402 answers of one resource. */
export function refusalFor<P>(resource: PaidResource<P>, receipts: { kid: string } | undefined): Refuse {
  return (reason, detail, paymentId) => ({
    kind: 'challenge',
    reason,
    detail,
    paymentId,
    challenge: challengeOf(resource, reason, { paymentId, receipts }),
  });
}

/** The payment row a claim inserts: the authorization, what it pays for, and the exchange as received. */
export function newPayment<P>(
  decoded: DecodedPayment,
  request: FacilitatorRequest,
  resource: PaidResource<P>,
): NewPayment {
  const { terms } = resource;
  const auth = decoded.authorization;
  return {
    purpose: resource.purpose,
    protocolVersion: decoded.version,
    // Stored as CAIP-2 for both versions: one authorization is one payment however it was encoded.
    network: `eip155:${terms.chainId}`,
    asset: terms.asset.address,
    payer: auth.from,
    payTo: terms.payTo,
    amountAtomic: auth.value,
    nonce: auth.nonce,
    validAfter: new Date(Number(auth.validAfter) * 1000),
    validBefore: new Date(Number(auth.validBefore) * 1000),
    resource: terms.resourceUrl,
    postId: resource.postId,
    registrationHandle: resource.registration?.handle,
    registrationWallet: resource.registration?.wallet,
    payload: request.payload,
    requirements: request.requirements,
  };
}

/** The payment in the request's headers; none, or one that cannot be read, is answered with 402. */
export function decodeOrRefuse(headers: { v1?: string; v2?: string }, refuse: Refuse): Step<DecodedPayment> {
  let decoded: DecodedPayment | undefined;
  try {
    decoded = decodePaymentHeader(headers);
  } catch (err) {
    if (err instanceof PaymentHeaderError) return { answer: refuse('invalid_payment_header', err.message) };
    throw err;
  }
  if (!decoded) {
    return { answer: refuse('payment_required', 'Pay with X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2)') };
  }
  return { next: decoded };
}

/** The facilitator a payment is settled through, and its move to `settling` (see Paywall.verify). */
export interface Settling {
  settler: string;
  ready: Promise<void>;
}

/** A claim made beside the facilitator's checks found the authorization, or its identifier, taken: nothing is sent. */
export class ClaimConflictError extends Error {
  constructor(conflict: string) {
    super(`payment claim conflict: ${conflict}`);
  }
}

/** The reconciler released a claim before it could be marked `settling`: it is not settled. */
export class ClaimReleasedError extends Error {
  constructor(paymentId: string) {
    super(`payment ${paymentId} was released before it could be settled`);
  }
}
