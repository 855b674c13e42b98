import type { SettleResponse } from '@x402/core/types';
import type { Db } from '../../data/db.js';
import {
  claimPayment,
  findByAuthorization,
  findByPaymentIdentifier,
  findPayment,
  markSettling,
  releaseClaim,
  transition,
} from '../../data/payments.repository.js';
import type { Payment } from '../../data/schema.js';
import { coalesced } from '../../platform/coalesce.js';
import type { Logger } from '../../platform/logger.js';
import { NotSentError } from './facilitator.js';
import { SettlementIndeterminateError, unavailable, type FacilitatorPool } from './facilitator-pool.js';
import {
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
import { acceptPayment } from './payment-terms.js';
import { paymentIdentifierOf } from './payment-identifier.js';
import { deliverSettled } from './paywall-delivery.js';
import { answerClaimConflict, answerSameIdentifier } from './paywall-replay.js';
import type { ReceiptIssuer } from './receipts.js';
import type { SettlementEffects } from './settlement.js';
import { decodePaymentHeader, type DecodedPayment, type FacilitatorRequest } from './x402-codec.js';

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
 * only after verification and a successful `prepare`.
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
    const claim = await claimPayment(this.deps.db, {
      ...newPayment(decoded.next, accepted.request, resource),
      paymentIdentifier: identifier,
    });
    if (!claim.claimed) return answerClaimConflict(this.deps, claim, decoded.next, resource, refuse, identifier);
    const payment = claim.payment;
    const prepared = await this.prepareOrRelease(resource, payment);
    const settling = await this.verify(payment, accepted.request, refuse, timings);
    if ('answer' in settling) return settling.answer;
    const settled = await this.settle(payment, accepted.request, settling.next, refuse, timings);
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
        const reason = verified.result.invalidReason ?? 'payment_invalid';
        await transition(this.deps.db, payment.id, ['pending'], 'failed', {
          failureReason: reason,
          facilitator: verified.facilitator,
        });
        const detail = verified.result.invalidMessage ?? `The facilitator refused the payment: ${reason}`;
        return { answer: refuse(reason, detail, payment.id) };
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
   * Settles through `settler` (or the next available facilitator); goes on with the settled
   * answer. No answer at all hands the payment to the retry job and answers `pending`; no
   * facilitator taking the call releases the claim (nothing was sent, nothing is charged).
   */
  private async settle(
    payment: Payment,
    request: FacilitatorRequest,
    { settler, ready }: Settling,
    refuse: Refuse,
    timings: PaywallTimings | undefined,
  ): Promise<Step<{ result: SettleResponse; facilitator: string }>> {
    const started = performance.now();
    let settled: { result: SettleResponse; facilitator: string };
    try {
      settled = await this.deps.facilitators.settle(request, settler, ready);
    } catch (err) {
      // A payment whose move to `settling` failed was not sent, whatever else went wrong meanwhile.
      const notSent = err instanceof NotSentError ? err : await notRecorded(ready);
      if (notSent) return notSentAnswer(notSent, refuse);
      if (err instanceof SettlementIndeterminateError) {
        return { answer: await this.handOverIndeterminate(payment.id, err, refuse) };
      }
      await transition(this.deps.db, payment.id, ['settling'], 'verified');
      await releaseClaim(this.deps.db, payment.id);
      throw unavailable(err, this.deps.log);
    } finally {
      if (timings) timings.facilitatorMs += performance.now() - started;
    }
    if (!settled.result.success) {
      const notSent = await notRecorded(ready);
      if (notSent) return notSentAnswer(notSent, refuse);
      const reason = settled.result.errorReason ?? 'settlement_failed';
      await transition(this.deps.db, payment.id, ['settling'], 'failed', {
        failureReason: reason,
        facilitator: settled.facilitator,
      });
      return { answer: refuse(reason, settled.result.errorMessage ?? `Settlement failed: ${reason}`, payment.id) };
    }
    // Sent, so marked `settling` first (a facilitator sends only then); recorded after that.
    await ready.catch(() => undefined);
    return { next: settled };
  }

  /** A settlement without an answer: the retry job resolves it from the chain; the buyer polls. */
  private async handOverIndeterminate(
    paymentId: string,
    err: SettlementIndeterminateError,
    refuse: Refuse,
  ): Promise<PaywallOutcome> {
    try {
      await this.deps.enqueueSettlement(paymentId);
      this.deps.log.warn({ paymentId, err: err.message }, 'settlement outcome unknown; handed to the retry job');
    } catch (enqueueErr) {
      // The payment is durable in status settling, so the answer does not depend on the queue:
      // the reconciler finds it and queues the retry once Redis answers again.
      this.deps.log.warn(
        { paymentId, err: err.message, enqueueErr },
        'settlement outcome unknown and the retry job could not be queued; the reconciler will queue it',
      );
    }
    const current = await findPayment(this.deps.db, paymentId);
    // Only the reconciler deletes payments, and never one in settling.
    if (!current) throw new Error(`payment ${paymentId} in settling is no longer recorded`);
    const pending = refuse('settlement_pending', '', paymentId);
    if (pending.kind !== 'challenge') throw new Error('a refusal is a challenge');
    return { kind: 'pending', payment: current, challenge: pending.challenge };
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

/** Once the move to `settling` is done: undefined if it was made, else why nothing was sent. */
const notRecorded = (ready: Promise<void>): Promise<NotSentError | undefined> =>
  ready.then(
    () => undefined,
    (cause: unknown) => new NotSentError(cause),
  );

/**
 * The answer to a payment that was not sent because it could not be marked `settling`: released
 * by the reconciler meanwhile, it may be sent again; the database failing, the error (503) goes
 * up and the claim is the reconciler's, as for any request that fails before settling.
 */
function notSentAnswer(err: NotSentError, refuse: Refuse): Step<never> {
  if (!(err.cause instanceof ClaimReleasedError)) throw err.cause;
  const detail = 'This payment took too long to process and was released; send it again';
  return { answer: refuse('payment_claim_expired', detail, undefined) };
}
