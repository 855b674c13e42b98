import type { Db } from '../../../data/db.js';
import { findPayment, IN_FLIGHT, TERMINAL, type ClaimResult } from '../../../data/payments.repository.js';
import type { Payment } from '../../../data/schema.js';
import { ServiceUnavailableError } from '../../../platform/errors.js';
import { sleep } from '../../../platform/net.js';
import { samePayment, settlementOf } from '../ledger/payment-record.js';
import type { ReceiptIssuer } from '../protocol/extensions/offer-receipt.js';
import type { DecodedPayment } from '../protocol/x402-codec.js';
import type { PaidResource, PaywallOutcome, Refuse } from './paid-resource.js';
import { REFUSALS, type ConflictCode } from './refusals.js';

/**
 * A payment seen before: the answers to a request whose authorization, or payment identifier, is
 * recorded already. A copy of that request is answered as it; anything else is refused.
 */

export interface RepeatDeps {
  db: Db;
  receipts: ReceiptIssuer | undefined;
  /** How long a repeat identified as the same client waits for the first request's outcome (default 20 s). */
  duplicateWaitMs?: number;
}

const conflict = (code: ConflictCode): PaywallOutcome => ({ kind: 'conflict', code, detail: REFUSALS[code].detail });

/** A claim that found its authorization, or its payment identifier, recorded already. */
export function answerClaimConflict<P>(
  deps: RepeatDeps,
  claim: Exclude<ClaimResult, { claimed: true }>,
  decoded: DecodedPayment,
  resource: PaidResource<P>,
  refuse: Refuse,
  identifier: string | undefined,
): Promise<PaywallOutcome> {
  switch (claim.conflict) {
    case 'same_identifier':
      return answerSameIdentifier(deps, claim.existing, decoded, resource, refuse);
    case 'same_authorization': {
      const identified = identifier !== undefined && claim.existing.payment_identifier === identifier;
      return answerRepeatedAuthorization(deps, claim.existing, decoded, resource, refuse, identified);
    }
    case 'handle_in_flight':
      return Promise.resolve(conflict('handle_taken'));
    default:
      return Promise.resolve(conflict('wallet_registered'));
  }
}

/**
 * A payment-identifier seen before. With the same signed payload it is the same request again:
 * it gets the first answer, also once settled (the identifier is not on chain, so only the
 * client that sent it knows it). With another payload it is a conflict.
 */
export function answerSameIdentifier<P>(
  deps: RepeatDeps,
  known: Payment,
  decoded: DecodedPayment,
  resource: PaidResource<P>,
  refuse: Refuse,
): Promise<PaywallOutcome> {
  if (!samePayment(known.payload, decoded)) return Promise.resolve(conflict('payment_identifier_conflict'));
  return answerRepeatedAuthorization(deps, known, decoded, resource, refuse, true);
}

/**
 * The same authorization again. It is the same payment only if it is the same signed payload
 * (a forged header that borrows a used nonce from the chain is not). Only the request whose claim
 * won is answered with what was paid for: from the moment the settlement is broadcast, anyone can
 * rebuild the payment from its calldata, so a copy proves nothing about who sends it. A repeat is
 * answered as the first request only when it proves it comes from the same client: the same
 * payment-identifier with the same payload (`identified`; the identifier is never on chain), or,
 * once settled, the resource's own check of the payer (a registration's signed-in wallet). Any
 * other copy of a payment in flight is refused at once with 409 `payment_in_progress` (it never
 * waits for the settlement), and a copy of a settled one with `payment_already_used`.
 */
export async function answerRepeatedAuthorization<P>(
  deps: RepeatDeps,
  existing: Payment,
  decoded: DecodedPayment,
  resource: PaidResource<P>,
  refuse: Refuse,
  identified = false,
): Promise<PaywallOutcome> {
  if (!samePayment(existing.payload, decoded)) {
    const code = 'invalid_exact_evm_nonce_already_used';
    return refuse(code, REFUSALS[code].detail);
  }
  if (existing.resource !== resource.terms.resourceUrl || existing.purpose !== resource.purpose) {
    return refuse('payment_already_used', 'This authorization already paid for another resource', existing.id);
  }
  if (!identified && IN_FLIGHT.includes(existing.status)) return conflict('payment_in_progress');
  const payment = identified ? await awaitOutcome(deps, existing.id) : existing;
  if (payment.status === 'settled') {
    if (!identified && !resource.mayRedeliver?.(payment)) {
      return refuse('payment_already_used', REFUSALS.payment_already_used.detail, payment.id);
    }
    const prepared = await resource.prepare(payment);
    const body = await resource.render(payment, prepared);
    const settlement = await settlementOf(deps.receipts, payment);
    return { kind: 'paid', body, payment, settlement, version: decoded.version, replay: true };
  }
  if (payment.status === 'failed' || payment.status === 'expired') {
    return refuse(
      payment.failure_reason ?? `payment_${payment.status}`,
      `This authorization's payment ${payment.status}`,
      payment.id,
    );
  }
  return pendingAnswer(payment, refuse);
}

/** A payment sent whose outcome is not known yet: the buyer polls it. */
export function pendingAnswer(payment: Payment, refuse: Refuse): PaywallOutcome {
  const pending = refuse('settlement_pending', REFUSALS.settlement_pending.detail, payment.id);
  if (pending.kind !== 'challenge') throw new Error('a refusal is a challenge');
  return { kind: 'pending', payment, challenge: pending.challenge };
}

/** Waits for the first request with this payment to reach a final state, or for the deadline. */
async function awaitOutcome(deps: RepeatDeps, id: string): Promise<Payment> {
  const deadline = Date.now() + (deps.duplicateWaitMs ?? 20_000);
  let delay = 20;
  for (;;) {
    const p = await findPayment(deps.db, id);
    // A claim released meanwhile (facilitators down) leaves nothing to wait for.
    if (!p)
      throw new ServiceUnavailableError(
        'The first request with this payment could not reach a facilitator',
        5,
        'facilitator_unavailable',
      );
    if (TERMINAL.includes(p.status) || Date.now() > deadline) return p;
    await sleep(delay);
    delay = Math.min(delay * 2, 250);
  }
}
