import type { Db } from '../../../data/db.js';
import {
  claimPayment,
  findByAuthorization,
  findByPaymentIdentifier,
  markSettling,
  releaseClaim,
  transition,
} from '../../../data/payments.repository.js';
import type { Payment } from '../../../data/schema.js';
import { coalesced } from '../../../platform/coalesce.js';
import type { Logger } from '../../../platform/logger.js';
import { unavailable, type FacilitatorPool } from '../facilitators/pool.js';
import {
  ClaimConflictError,
  ClaimReleasedError,
  decodeOrRefuse,
  newPayment,
  refusalFor,
  type Settling,
  type PaidResource,
  type PaywallOutcome,
  type PaywallTimings,
  type Refuse,
  type Step,
} from './paid-resource.js';
import { acceptPayment } from '../protocol/payment-terms.js';
import { paymentIdentifierOf } from '../protocol/extensions/payment-identifier.js';
import { deliverSettled } from './deliver.js';
import { callSettle, refusedPayment, settledStep } from './settle.js';
import { refusalOf } from '../facilitators/facilitator.js';
import { answerClaimConflict, answerSameIdentifier } from './repeats.js';
import type { ReceiptIssuer } from '../protocol/extensions/offer-receipt.js';
import type { SettlementEffects } from '../ledger/settlement.js';
import { decodePaymentHeader, type DecodedPayment, type FacilitatorRequest } from '../protocol/x402-codec.js';

export type { PaidResource, PaywallOutcome, PaywallTimings };

export interface PaywallDeps {
  db: Db;
  facilitators: FacilitatorPool;
  /** What each purpose buys, applied when its payment is marked settled. */
  settlementEffects: SettlementEffects;
  log: Logger;
  /** Hands a settlement whose outcome is unknown to the retry job. */
  enqueueSettlement(paymentId: string): Promise<void>;
  /**
   * Signs the offer-receipt receipt every settlement response carries. Undefined when the x402
   * extensions are off (X402_EXTENSIONS=false): plain x402, no receipt, no extension declared.
   */
  receipts: ReceiptIssuer | undefined;
  /** How long a duplicate request waits for the first one's outcome. */
  duplicateWaitMs?: number;
}

/**
 * The x402 flow for one request: decode the payment header, check it against our terms,
 * claim its authorization (one payment per authorization), verify with a facilitator, prepare
 * the delivery, settle, record what was bought, and answer. Money moves only in `settle`, and
 * only after verification and a successful `prepare`. A resource that knows what it sells before
 * any claim (`sold`), paid through a facilitator that verifies in its settle, is claimed already
 * `settling` while that facilitator checks the payment: one statement, off the request's own path.
 */
export class Paywall {
  /** Marks a payment `settling`, those of one turn of the event loop in one statement; whether it moved. */
  private readonly markSettling: (p: { id: string; facilitator: string }) => Promise<boolean>;

  constructor(private readonly deps: PaywallDeps) {
    this.markSettling = coalesced(async (list: Array<{ id: string; facilitator: string }>) => {
      const moved = new Set((await markSettling(deps.db, list)).map((p) => p.id));
      return list.map((p) => moved.has(p.id));
    });
  }

  async process<P>(
    headers: { v1?: string; v2?: string },
    resource: PaidResource<P>,
    timings?: PaywallTimings,
  ): Promise<PaywallOutcome> {
    const refuse = refusalFor(resource, this.deps.receipts);
    const decoded = decodeOrRefuse(headers, refuse);
    if ('answer' in decoded) return decoded.answer;
    // Malformed: 400 before anything is claimed or written.
    const identifier = this.deps.receipts ? paymentIdentifierOf(decoded.next) : undefined;
    const accepted = acceptPayment(decoded.next, resource.terms);
    if (!accepted.ok) return refuse(accepted.mismatch.reason, accepted.mismatch.detail);
    if (identifier) {
      const known = await findByPaymentIdentifier(this.deps.db, identifier);
      if (known) return answerSameIdentifier(this.deps, known, decoded.next, resource, refuse);
    }
    const newRow = { ...newPayment(decoded.next, accepted.request, resource), paymentIdentifier: identifier };
    const { sold } = resource;
    const settler = sold === undefined ? undefined : this.deps.facilitators.settlerThatVerifies();
    if (settler && sold !== undefined) {
      // Nothing to check against the claimed payment, and a facilitator that checks the payment
      // itself: claimed already `settling`, beside its checks, and sent once that is done.
      const claiming = claimPayment(this.deps.db, newRow, { settlingThrough: settler });
      const ready = claiming.then((claim) => {
        if (!claim.claimed) throw new ClaimConflictError(claim.conflict);
      });
      ready.catch(() => undefined);
      // Never rejects: its failure is the outcome's `error`.
      const settling = callSettle(this.deps.facilitators, accepted.request, { settler, ready }, timings);
      // A claim that failed (thrown here) or conflicted sends nothing, and is answered without
      // waiting for the facilitator: a copy of a payment in flight never waits for its settlement.
      const claim = await claiming;
      if (!claim.claimed) return answerClaimConflict(this.deps, claim, decoded.next, resource, refuse, identifier);
      const settled = await settledStep(this.deps, claim.payment, await settling, ready, refuse);
      if ('answer' in settled) return settled.answer;
      return deliverSettled(this.deps, claim.payment, settled.next, decoded.next, resource, sold);
    }
    const claim = await claimPayment(this.deps.db, newRow);
    if (!claim.claimed) return answerClaimConflict(this.deps, claim, decoded.next, resource, refuse, identifier);
    const payment = claim.payment;
    const prepared = await this.prepareOrRelease(resource, payment);
    const settling = await this.verify(payment, accepted.request, refuse, timings);
    if ('answer' in settling) return settling.answer;
    const outcome = await callSettle(this.deps.facilitators, accepted.request, settling.next, timings);
    const settled = await settledStep(this.deps, payment, outcome, settling.next.ready, refuse);
    if ('answer' in settled) return settled.answer;
    return deliverSettled(this.deps, payment, settled.next, decoded.next, resource, prepared);
  }

  /**
   * The 402 of a resource for a request that carries no payment: what a client or a crawler
   * probing the route is told to pay, with every extension the route declares.
   */
  challenge<P>(resource: PaidResource<P>): PaywallOutcome {
    return refusalFor(resource, this.deps.receipts)(
      'payment_required',
      'Pay with X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2)',
    );
  }

  /** A 402 of a resource for a reason found beside the payment: a refused Sign-In-With-X proof. */
  refusal<P>(resource: PaidResource<P>, reason: string, detail: string): PaywallOutcome {
    return refusalFor(resource, this.deps.receipts)(reason, detail);
  }

  /** Runs the resource's checks before any money moves; a refusal releases the claim, so nothing is charged. */
  private async prepareOrRelease<P>(resource: PaidResource<P>, payment: Payment): Promise<P> {
    try {
      return await resource.prepare(payment);
    } catch (err) {
      await releaseClaim(this.deps.db, payment.id);
      throw err;
    }
  }

  /**
   * Verifies the payment unless the facilitator that would settle it verifies in its settle, and
   * starts moving it to `settling`; goes on with the facilitator to settle through and that move
   * (`ready`), which the facilitator waits for before it sends anything, checking and simulating
   * meanwhile. The x402 flow verifies, delivers, then settles. Here delivery is prepared before
   * and rendered after settlement, so when the facilitator's settle verifies by itself, verifying
   * first would only repeat it.
   */
  private async verify(
    payment: Payment,
    request: FacilitatorRequest,
    refuse: Refuse,
    timings: PaywallTimings | undefined,
  ): Promise<Step<Settling>> {
    let settler = this.deps.facilitators.settlerThatVerifies();
    if (!settler) {
      const started = performance.now();
      let verified: Awaited<ReturnType<FacilitatorPool['verify']>>;
      try {
        verified = await this.deps.facilitators.verify(request);
      } catch (err) {
        await releaseClaim(this.deps.db, payment.id);
        throw unavailable(err, this.deps.log);
      } finally {
        if (timings) timings.facilitatorMs += performance.now() - started;
      }
      if (!verified.result.isValid) {
        const { invalidReason, invalidMessage } = verified.result;
        const refusal = refusalOf(invalidReason, invalidMessage, 'payment_invalid');
        return { answer: await refusedPayment(this.deps, payment, 'pending', refusal, verified.facilitator, refuse) };
      }
      await transition(this.deps.db, payment.id, ['pending'], 'verified', { facilitator: verified.facilitator });
      settler = verified.facilitator;
    }
    const ready = this.markSettling({ id: payment.id, facilitator: settler }).then((moved) => {
      // The reconciler gave this claim up (the request took minutes): do not settle what nobody tracks.
      if (!moved) throw new ClaimReleasedError(payment.id);
    });
    // Awaited in `settle`; observed here too, so its failure is never an unhandled rejection.
    ready.catch(() => undefined);
    return { next: { settler, ready } };
  }

  /**
   * The payment already recorded for the authorization in these headers, if any (malformed
   * headers have none). Lets a use case recognise a retry of a paid request before deciding
   * what the request is.
   */
  async recordedPayment(
    headers: { v1?: string; v2?: string },
    chainId: number,
    asset: string,
  ): Promise<Payment | undefined> {
    let decoded: DecodedPayment | undefined;
    try {
      decoded = decodePaymentHeader(headers);
    } catch {
      return undefined;
    }
    if (!decoded) return undefined;
    return findByAuthorization(
      this.deps.db,
      `eip155:${chainId}`,
      asset,
      decoded.authorization.from,
      decoded.authorization.nonce,
    );
  }
}
