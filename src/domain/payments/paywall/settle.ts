import type { SettleResponse } from '@x402/core/types';
import type { Db } from '../../../data/db.js';
import { discardForgedClaim, findPayment, releaseClaim, transition } from '../../../data/payments.repository.js';
import type { Payment, PaymentStatus } from '../../../data/schema.js';
import { ServiceUnavailableError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logger.js';
import { NotSentError, refusalOf } from '../facilitators/facilitator.js';
import { batchableTransfer, hasValidSignature } from '../protocol/eip3009.js';
import { storedFacilitatorRequest } from '../ledger/payment-record.js';
import { messageOf } from '../facilitators/breaker.js';
import { SettlementIndeterminateError, unavailable, type FacilitatorPool } from '../facilitators/pool.js';
import {
  ClaimReleasedError,
  type PaywallOutcome,
  type PaywallTimings,
  type Refuse,
  type Settling,
  type Step,
} from './paid-resource.js';
import type { FacilitatorRequest } from '../protocol/x402-codec.js';

export interface SettleStepDeps {
  db: Db;
  log: Logger;
  /** Hands a settlement whose outcome is unknown to the retry job. */
  enqueueSettlement(paymentId: string): Promise<void>;
}

/** A facilitator's settle call: its answer, or what it threw. */
export type SettleOutcome = { settled: { result: SettleResponse; facilitator: string } } | { error: unknown };

/** Asks the facilitator pool to settle through `settler` (or the next available facilitator) once `ready`. */
export async function callSettle(
  facilitators: FacilitatorPool,
  request: FacilitatorRequest,
  { settler, ready }: Settling,
  timings: PaywallTimings | undefined,
): Promise<SettleOutcome> {
  const started = performance.now();
  try {
    return { settled: await facilitators.settle(request, settler, ready) };
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
export async function settledStep(
  deps: SettleStepDeps,
  payment: Payment,
  outcome: SettleOutcome,
  ready: Promise<void>,
  refuse: Refuse,
): Promise<Step<{ result: SettleResponse; facilitator: string }>> {
  if ('error' in outcome) {
    const err = outcome.error;
    // A payment whose move to `settling` failed was not sent, whatever else went wrong meanwhile.
    const notSent = await notRecorded(ready);
    if (notSent) return notSentAnswer(notSent, refuse);
    if (err instanceof SettlementIndeterminateError) {
      return { answer: await handOverIndeterminate(deps, payment.id, err, refuse) };
    }
    // Nothing was sent: no facilitator took it (or one did not send it for a reason of its own).
    await transition(deps.db, payment.id, ['settling'], 'verified');
    await releaseClaim(deps.db, payment.id);
    if (err instanceof NotSentError) {
      deps.log.warn({ paymentId: payment.id, err: messageOf(err.cause) }, 'payment not sent; its claim is released');
      throw new ServiceUnavailableError(
        'The payment could not be sent; nothing was charged',
        5,
        'facilitator_unavailable',
        { cause: err },
      );
    }
    throw unavailable(err, deps.log);
  }
  const { settled } = outcome;
  if (!settled.result.success) {
    const notSent = await notRecorded(ready);
    if (notSent) return notSentAnswer(notSent, refuse);
    const refusal = refusalOf(settled.result.errorReason, settled.result.errorMessage, 'settlement_failed');
    return { answer: await refusedPayment(deps, payment, 'settling', refusal, settled.facilitator, refuse) };
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
export async function refusedPayment(
  deps: SettleStepDeps,
  payment: Payment,
  from: PaymentStatus,
  refusal: ReturnType<typeof refusalOf>,
  facilitator: string,
  refuse: Refuse,
): Promise<PaywallOutcome> {
  if (refusal.raw !== undefined)
    deps.log.warn(
      { paymentId: payment.id, facilitator, refusal: refusal.raw },
      'payment refused without a reason code',
    );
  const kept = signedByPayer(payment);
  if (kept) {
    await transition(deps.db, payment.id, [from], 'failed', { failureReason: refusal.reason, facilitator });
  } else await discardForgedClaim(deps.db, payment.id);
  return refuse(refusal.reason, refusal.detail, kept ? payment.id : undefined);
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

/** A settlement without an answer: the retry job resolves it from the chain; the buyer polls. */
async function handOverIndeterminate(
  deps: SettleStepDeps,
  paymentId: string,
  err: SettlementIndeterminateError,
  refuse: Refuse,
): Promise<PaywallOutcome> {
  try {
    await deps.enqueueSettlement(paymentId);
    deps.log.warn({ paymentId, err: err.message }, 'settlement outcome unknown; handed to the retry job');
  } catch (enqueueErr) {
    // The payment is durable in status settling, so the answer does not depend on the queue:
    // the reconciler finds it and queues the retry once Redis answers again.
    deps.log.warn(
      { paymentId, err: err.message, enqueueErr },
      'settlement outcome unknown and the retry job could not be queued; the reconciler will queue it',
    );
  }
  const current = await findPayment(deps.db, paymentId);
  // Only the reconciler deletes payments, and never one in settling.
  if (!current) throw new Error(`payment ${paymentId} in settling is no longer recorded`);
  const pending = refuse('settlement_pending', '', paymentId);
  if (pending.kind !== 'challenge') throw new Error('a refusal is a challenge');
  return { kind: 'pending', payment: current, challenge: pending.challenge };
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
