import type { SettleResponse } from '@x402/core/types';
import type { Db } from '../../../data/db.js';
import {
  claimPayment,
  discardForgedClaim,
  findByAuthorization,
  findByPaymentIdentifier,
  findPayment,
  markSettling,
  releaseClaim,
  failPayment,
  transition,
} from '../../../data/payments.repository.js';
import type { Payment, PaymentStatus } from '../../../data/schema.js';
import { coalesced } from '../../../platform/coalesce.js';
import { ServiceUnavailableError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logger.js';
import { messageOf } from '../facilitators/breaker.js';
import { NotSentError, refusalOf } from '../facilitators/facilitator.js';
import { SettlementIndeterminateError, unavailable, type FacilitatorPool } from '../facilitators/pool.js';
import { settlementOf, storedFacilitatorRequest } from '../ledger/payment-record.js';
import { finalizeSettlement, type SettlementEffects } from '../ledger/settlement.js';
import { batchableTransfer, hasValidSignature } from '../protocol/eip3009.js';
import type { ReceiptIssuer } from '../protocol/extensions/offer-receipt.js';
import { paymentIdentifierOf } from '../protocol/extensions/payment-identifier.js';
import { acceptPayment } from '../protocol/payment-terms.js';
import {
  PaymentPayloadError,
  readPayment,
  type DecodedPayment,
  type FacilitatorRequest,
  type SentPayment,
} from '../protocol/x402-codec.js';
import {
  ClaimConflictError,
  ClaimReleasedError,
  newPayment,
  refusalFor,
  type PaidResource,
  type PaywallOutcome,
  type PaywallTimings,
  type Refuse,
  type Settling,
  type Step,
} from './paid-resource.js';
import { answerClaimConflict, answerSameIdentifier, pendingAnswer } from './repeats.js';
import { REFUSALS } from './refusals.js';

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
   * Signs the offer-receipt receipt every settlement carries. Undefined when the x402 extensions
   * are off (X402_EXTENSIONS=false): plain x402, no receipt, no extension declared.
   */
  receipts: ReceiptIssuer | undefined;
  /** How long a repeat identified as the same client waits for the first request's outcome. */
  duplicateWaitMs?: number;
}

/** A facilitator's settle call: its answer, or what it threw. */
type SettleOutcome = { settled: { result: SettleResponse; facilitator: string } } | { error: unknown };

/**
 * The x402 flow of one paid request, in the order of its lifecycle:
 *
 *   decode → accept → claim → verify → settle → record → deliver
 *
 * - decode: the payment a transport handed over (an x402 payload object; no headers here);
 * - accept: checked against the resource's terms; a known payment-identifier is a repeat;
 * - claim: one payment per authorization, recorded before anything is sent (repeats.ts answers
 *   a claim that finds it taken);
 * - verify: by a facilitator, unless the one that settles verifies in its settle; the resource's
 *   own checks (`prepare`) run before any money moves;
 * - settle: through the facilitator pool; money moves only here;
 * - record: settled, with what it bought, in one statement (ledger/settlement.ts);
 * - deliver: the resource rendered with its settlement and signed receipt.
 *
 * A resource that knows what it sells before any claim (`sold`), paid through a facilitator that
 * verifies in its settle, is claimed already `settling` while that facilitator checks the payment:
 * one statement, off the request's own path. Every answer is a PaywallOutcome; only faults of the
 * service (503) and a resource's own refusals in `prepare` are thrown.
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
    sent: SentPayment | undefined,
    resource: PaidResource<P>,
    timings?: PaywallTimings,
  ): Promise<PaywallOutcome> {
    const refuse = refusalFor(resource, this.deps.receipts);
    // decode: malformed is answered before anything is claimed or written.
    const decoded = decode(sent, refuse);
    if ('answer' in decoded) return decoded.answer;
    const payment = decoded.next;
    // accept
    const identifier = this.deps.receipts ? paymentIdentifierOf(payment) : undefined;
    const accepted = acceptPayment(payment, resource.terms);
    if (!accepted.ok) return refuse(accepted.mismatch.reason, accepted.mismatch.detail);
    if (identifier) {
      const known = await findByPaymentIdentifier(this.deps.db, identifier);
      if (known) return answerSameIdentifier(this.deps, known, payment, resource, refuse);
    }
    const row = { ...newPayment(payment, accepted.request, resource), paymentIdentifier: identifier };
    const { sold } = resource;
    const settler = sold === undefined ? undefined : this.deps.facilitators.settlerThatVerifies();
    if (settler && sold !== undefined) {
      // claim, beside the facilitator's checks: nothing to check against the claimed payment, and a
      // facilitator that checks the payment itself. Claimed already `settling`, sent once claimed.
      const claiming = claimPayment(this.deps.db, row, { settlingThrough: settler });
      const ready = claiming.then((claim) => {
        if (!claim.claimed) throw new ClaimConflictError(claim.conflict);
      });
      ready.catch(() => undefined);
      const settling = this.settle(accepted.request, { settler, ready }, timings);
      // A claim that failed (thrown here) or conflicted sends nothing, and is answered without
      // waiting for the facilitator: a copy of a payment in flight never waits for its settlement.
      const claim = await claiming;
      if (!claim.claimed) return answerClaimConflict(this.deps, claim, payment, resource, refuse, identifier);
      const settled = await this.settled(claim.payment, await settling, ready, refuse);
      if ('answer' in settled) return settled.answer;
      return this.deliver(claim.payment, settled.next, payment, resource, sold);
    }
    // claim, then verify
    const claim = await claimPayment(this.deps.db, row);
    if (!claim.claimed) return answerClaimConflict(this.deps, claim, payment, resource, refuse, identifier);
    const claimed = claim.payment;
    const prepared = await this.prepareOrRelease(resource, claimed);
    const verified = await this.verify(claimed, accepted.request, refuse, timings);
    if ('answer' in verified) return verified.answer;
    // settle
    const outcome = await this.settle(accepted.request, verified.next, timings);
    const settled = await this.settled(claimed, outcome, verified.next.ready, refuse);
    if ('answer' in settled) return settled.answer;
    // record and deliver
    return this.deliver(claimed, settled.next, payment, resource, prepared);
  }

  /**
   * The 402 of a resource for a request that carries no payment: what a client or a crawler
   * probing the route is told to pay, with every extension the route declares.
   */
  challenge<P>(resource: PaidResource<P>): PaywallOutcome {
    return refusalFor(resource, this.deps.receipts)('payment_required', REFUSALS.payment_required.detail);
  }

  /** A 402 of a resource for a reason found beside the payment: a refused Sign-In-With-X proof. */
  refusal<P>(resource: PaidResource<P>, reason: string, detail: string): PaywallOutcome {
    return refusalFor(resource, this.deps.receipts)(reason, detail);
  }

  /**
   * The payment already recorded for this sent payment's authorization, if any (one that cannot be
   * read has none). Lets a use case recognise a retry of a paid request before deciding what the
   * request is.
   */
  async recordedPayment(sent: SentPayment | undefined, chainId: number, asset: string): Promise<Payment | undefined> {
    let decoded: DecodedPayment;
    try {
      if (!sent) return undefined;
      decoded = readPayment(sent);
    } catch {
      return undefined;
    }
    const { from, nonce } = decoded.authorization;
    return findByAuthorization(this.deps.db, `eip155:${chainId}`, asset, from, nonce);
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
   * verify: unless the facilitator that would settle the payment verifies in its settle; then
   * starts moving it to `settling` (`ready`), which the facilitator waits for before it sends
   * anything, checking and simulating meanwhile. The x402 flow verifies, delivers, then settles.
   * Here delivery is prepared before and rendered after settlement, so when the facilitator's
   * settle verifies by itself, verifying first would only repeat it.
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
        return { answer: await this.refused(payment, 'pending', refusal, verified.facilitator, refuse) };
      }
      await transition(this.deps.db, payment.id, ['pending'], 'verified', { facilitator: verified.facilitator });
      settler = verified.facilitator;
    }
    const ready = this.markSettling({ id: payment.id, facilitator: settler }).then((moved) => {
      // The reconciler gave this claim up (the request took minutes): do not settle what nobody tracks.
      if (!moved) throw new ClaimReleasedError(payment.id);
    });
    // Awaited in `settled`; observed here too, so its failure is never an unhandled rejection.
    ready.catch(() => undefined);
    return { next: { settler, ready } };
  }

  /** settle: asks the pool to settle through `settler` (or the next available facilitator) once `ready`. Never rejects. */
  private async settle(
    request: FacilitatorRequest,
    { settler, ready }: Settling,
    timings: PaywallTimings | undefined,
  ): Promise<SettleOutcome> {
    const started = performance.now();
    try {
      return { settled: await this.deps.facilitators.settle(request, settler, ready) };
    } catch (error) {
      return { error };
    } finally {
      if (timings) timings.facilitatorMs += performance.now() - started;
    }
  }

  /**
   * What the facilitator's answer means for the payment: goes on with the settled answer. No answer
   * at all hands the payment to the retry job and answers `pending`; no facilitator taking the call
   * releases the claim (nothing was sent, nothing is charged).
   */
  private async settled(
    payment: Payment,
    outcome: SettleOutcome,
    ready: Promise<void>,
    refuse: Refuse,
  ): Promise<Step<{ result: SettleResponse; facilitator: string }>> {
    const { db, log } = this.deps;
    if ('error' in outcome) {
      const err = outcome.error;
      // A payment whose move to `settling` failed was not sent, whatever else went wrong meanwhile.
      const notSent = await notRecorded(ready);
      if (notSent) return notSentAnswer(notSent, refuse);
      if (err instanceof SettlementIndeterminateError) {
        return { answer: await this.handOverIndeterminate(payment.id, err, refuse) };
      }
      // Nothing was sent: no facilitator took it (or one did not send it for a reason of its own).
      await transition(db, payment.id, ['settling'], 'verified');
      await releaseClaim(db, payment.id);
      if (err instanceof NotSentError) {
        log.warn({ paymentId: payment.id, err: messageOf(err.cause) }, 'payment not sent; its claim is released');
        throw new ServiceUnavailableError(
          'The payment could not be sent; nothing was charged',
          5,
          'facilitator_unavailable',
          { cause: err },
        );
      }
      throw unavailable(err, log);
    }
    const { settled } = outcome;
    if (!settled.result.success) {
      const notSent = await notRecorded(ready);
      if (notSent) return notSentAnswer(notSent, refuse);
      const refusal = refusalOf(settled.result.errorReason, settled.result.errorMessage, 'settlement_failed');
      return { answer: await this.refused(payment, 'settling', refusal, settled.facilitator, refuse) };
    }
    // Sent, so marked `settling` first (a facilitator sends only then); recorded after that.
    await ready.catch(() => undefined);
    return { next: settled };
  }

  /**
   * Records a payment a facilitator refused, and answers why. Kept as failed, with its reason, only
   * when its signature is its payer's own (recovered here, whatever the facilitator said): anything
   * else (another key's signature, a smart-wallet or ERC-6492 wrapper no wallet key signed) is
   * forgotten, so that nobody leaves rows in a stranger's name in its list of payments; the 402 then
   * names no payment.
   */
  private async refused(
    payment: Payment,
    from: PaymentStatus,
    refusal: ReturnType<typeof refusalOf>,
    facilitator: string,
    refuse: Refuse,
  ): Promise<PaywallOutcome> {
    const { db, log } = this.deps;
    if (refusal.raw !== undefined)
      log.warn({ paymentId: payment.id, facilitator, refusal: refusal.raw }, 'payment refused without a reason code');
    const kept = signedByPayer(payment);
    if (kept) {
      await failPayment(db, payment.id, [from], { failureReason: refusal.reason, facilitator });
    } else await discardForgedClaim(db, payment.id);
    return refuse(refusal.reason, refusal.detail, kept ? payment.id : undefined);
  }

  /** A settlement without an answer: the retry job resolves it from the chain; the buyer polls. */
  private async handOverIndeterminate(
    paymentId: string,
    err: SettlementIndeterminateError,
    refuse: Refuse,
  ): Promise<PaywallOutcome> {
    const { db, log } = this.deps;
    try {
      await this.deps.enqueueSettlement(paymentId);
      log.warn({ paymentId, err: err.message }, 'settlement outcome unknown; handed to the retry job');
    } catch (enqueueErr) {
      // The payment is durable in status settling, so the answer does not depend on the queue:
      // the reconciler finds it and queues the retry once Redis answers again.
      log.warn(
        { paymentId, err: err.message, enqueueErr },
        'settlement outcome unknown and the retry job could not be queued; the reconciler will queue it',
      );
    }
    const current = await findPayment(db, paymentId);
    // Only the reconciler deletes payments, and never one in settling.
    if (!current) throw new Error(`payment ${paymentId} in settling is no longer recorded`);
    return pendingAnswer(current, refuse);
  }

  /**
   * record and deliver: the settlement is recorded with what it bought, then the resource is
   * rendered with its settlement and signed receipt. The payment may have been resolved meanwhile
   * by the retry job, from this same use of the authorization: settled already, it is delivered as
   * is; marked failed or expired by a look at the chain before this transaction was mined, it is
   * settled now (see finalizeSettlement).
   */
  private async deliver<P>(
    claimed: Payment,
    settled: { result: SettleResponse; facilitator: string },
    decoded: DecodedPayment,
    resource: PaidResource<P>,
    prepared: P,
  ): Promise<PaywallOutcome> {
    const { db, settlementEffects, log, receipts } = this.deps;
    const { transaction } = settled.result;
    // The receipt is signed while the settlement is being recorded: it states the settlement time
    // chosen here, which the row is written with. Signing is synchronous CPU work, so it starts on
    // the next turn of the event loop, once the transaction's first statement is on its way.
    const settledAt = new Date();
    const recording = finalizeSettlement(db, settlementEffects, claimed, transaction, settled.facilitator, {
      settledAt,
      ...resource.recordAs?.(prepared),
    });
    const anticipated = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => receipts?.receiptFor({ ...claimed, status: 'settled', tx_hash: transaction, settled_at: settledAt }))
      .catch(() => undefined);
    const final = await recording;
    const signed = await anticipated;
    if (final.tx_hash?.toLowerCase() !== transaction.toLowerCase()) {
      // One authorization is used once on chain, so two transactions for it mean a facilitator
      // reported a settlement the chain does not hold: the ledger keeps the one recorded first.
      log.warn(
        { paymentId: claimed.id, recorded: final.tx_hash, reported: transaction, facilitator: settled.facilitator },
        'settled payment recorded with another transaction than its facilitator reported',
      );
    }
    const body = await resource.render(final, prepared);
    const asAnticipated =
      signed !== undefined &&
      final.tx_hash === transaction &&
      final.settled_at !== null &&
      new Date(final.settled_at).getTime() === settledAt.getTime();
    const settlement = await settlementOf(receipts, final, asAnticipated ? signed : undefined);
    return { kind: 'paid', body, payment: final, settlement, version: decoded.version, replay: false };
  }
}

/** decode: the payment a transport handed over; none, or one that cannot be read, is answered with 402. */
function decode(sent: SentPayment | undefined, refuse: Refuse): Step<DecodedPayment> {
  if (!sent) return { answer: refuse('payment_required', REFUSALS.payment_required.detail) };
  try {
    return { next: readPayment(sent) };
  } catch (err) {
    if (err instanceof PaymentPayloadError) return { answer: refuse('invalid_payment_header', err.message) };
    throw err;
  }
}

/** Whether the payment's authorization carries a plain signature by its payer. */
function signedByPayer(payment: Payment): boolean {
  try {
    const transfer = batchableTransfer(storedFacilitatorRequest(payment));
    return transfer !== undefined && hasValidSignature(transfer, Number(payment.network.split(':')[1]));
  } catch {
    return false;
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
  const code = 'payment_claim_expired';
  return { answer: refuse(code, REFUSALS[code].detail, undefined) };
}
