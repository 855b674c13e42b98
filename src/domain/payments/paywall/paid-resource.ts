import type { SettleResponse } from '@x402/core/types';
import type { Payment } from '../../../data/schema.js';
import type { NewPayment } from '../../../data/payments.repository.js';
import { challengeExtensions } from '../protocol/extensions/declare.js';
import type { ResourceListing } from '../protocol/extensions/bazaar.js';
import {
  challengeFor,
  type Challenge,
  type DecodedPayment,
  type FacilitatorRequest,
  type PaymentTerms,
} from '../protocol/x402-codec.js';
import type { ConflictCode } from './refusals.js';

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

/**
 * The paywall's one answer to a request: what was paid for (`paid`), a 402 challenge with the
 * reason of its refusal (`challenge`), a 409 for a payment that is another request's (`conflict`),
 * or a payment sent whose outcome is not known yet (`pending`). Codes are stable (refusals.ts);
 * transports state them (src/api/http/x402.ts, src/api/mcp/buy-skill.ts). Only faults of the
 * service itself (a database or every facilitator unreachable: 503) and a resource's own checks
 * (`prepare`) are thrown.
 */
export type PaywallOutcome =
  | { kind: 'challenge'; reason: string; detail: string; challenge: Challenge; paymentId?: string }
  | { kind: 'conflict'; code: ConflictCode; detail: string }
  | {
      kind: 'paid';
      body: unknown;
      payment: Payment;
      /** The x402 SettleResponse, with the signed offer-receipt receipt in its extensions when they are on. */
      settlement: SettleResponse;
      /** The protocol version the client paid with: its settlement is stated in that version. */
      version: 1 | 2;
      replay: boolean;
    }
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
