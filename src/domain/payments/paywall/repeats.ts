import type { Db } from '../../../data/db.js';
import { findPayment, IN_FLIGHT, TERMINAL, type ClaimResult } from '../../../data/payments.repository.js';
import type { Payment } from '../../../data/schema.js';
import { ConflictError, ServiceUnavailableError } from '../../../platform/errors.js';
import { sleep } from '../../../platform/net.js';
import { OFFER_RECEIPT } from '@x402/extensions/offer-receipt';
import type { PaidResource, PaywallOutcome, Refuse } from './paid-resource.js';
import { receiptOf, samePayment } from '../ledger/payment-record.js';
import type { EIP712SignedReceipt, ReceiptIssuer } from '../protocol/extensions/offer-receipt.js';
import { settlementHeader, type DecodedPayment } from '../protocol/x402-codec.js';

export interface ReplayDeps {
  db: Db;
  receipts: ReceiptIssuer | undefined;
  /** How long a duplicate request waits for the first one's outcome (default 20 s). */
  duplicateWaitMs?: number;
}

/**
 * A claim that found its authorization, or its payment identifier, recorded already: a copy of
 * that request (answered as it), or a conflict to refuse.
 */
export function answerClaimConflict<P>(
  deps: ReplayDeps,
  claim: Exclude<ClaimResult, { claimed: true }>,
  decoded: DecodedPayment,
  resource: PaidResource<P>,
  refuse: Refuse,
  identifier: string | undefined,
): Promise<PaywallOutcome> {
  if (claim.conflict === 'same_identifier')
    return answerSameIdentifier(deps, claim.existing, decoded, resource, refuse);
  if (claim.conflict === 'same_authorization') {
    const identified = identifier !== undefined && claim.existing.payment_identifier === identifier;
    return answerRepeatedAuthorization(deps, claim.existing, decoded, resource, refuse, identified);
  }
  if (claim.conflict === 'handle_in_flight')
    throw new ConflictError('Another registration for this handle is being paid right now', 'handle_taken');
  throw new ConflictError('Another registration for this wallet is being paid right now', 'wallet_registered');
}

/**
 * A payment-identifier seen before. With the same signed payload it is the same request again:
 * it gets the first answer, also once settled (the identifier is not on chain, so only the
 * client that sent it knows it). With another payload it is a conflict.
 */
export function answerSameIdentifier<P>(
  deps: ReplayDeps,
  known: Payment,
  decoded: DecodedPayment,
  resource: PaidResource<P>,
  refuse: Refuse,
): Promise<PaywallOutcome> {
  if (!samePayment(known.payload, decoded)) {
    throw new ConflictError(
      'This payment identifier was sent with another payment: use a new identifier for a new payment',
      'payment_identifier_conflict',
    );
  }
  return answerRepeatedAuthorization(deps, known, decoded, resource, refuse, true);
}

/**
 * The same authorization again. It is the same payment only if it is the same signed payload
 * (a forged header that borrows a used nonce from the chain is not). Only the request whose claim
 * won is answered with what was paid for: from the moment the settlement is broadcast, anyone can
 * rebuild the header from its calldata, so a copy proves nothing about who sends it. A repeat is
 * answered as the first request only when it proves it comes from the same client: the same
 * payment-identifier with the same payload (`identified`; the identifier is never on chain), or,
 * once settled, the resource's own check of the payer (a registration's signed-in wallet). Any
 * other copy of a payment in flight is refused at once with 409 `payment_in_progress` (it never
 * waits for the settlement), and a copy of a settled one with `payment_already_used`.
 */
export async function answerRepeatedAuthorization<P>(
  deps: ReplayDeps,
  existing: Payment,
  decoded: DecodedPayment,
  resource: PaidResource<P>,
  challenge: Refuse,
  identified = false,
): Promise<PaywallOutcome> {
  if (!samePayment(existing.payload, decoded)) {
    return challenge('invalid_exact_evm_nonce_already_used', 'This authorization nonce belongs to another payment');
  }
  if (existing.resource !== resource.terms.resourceUrl || existing.purpose !== resource.purpose) {
    return challenge('payment_already_used', 'This authorization already paid for another resource', existing.id);
  }
  if (!identified && IN_FLIGHT.includes(existing.status)) {
    throw new ConflictError(
      'This payment is being settled for the request that sent it first; only that request is answered. ' +
        'The payer reads what it bought once settled, with Sign-In-With-X (SIGN-IN-WITH-X) or its agent token',
      'payment_in_progress',
    );
  }
  const payment = identified ? await awaitOutcome(deps, existing.id) : existing;
  if (payment.status === 'settled') {
    if (!identified && !resource.mayRedeliver?.(payment)) {
      return challenge(
        'payment_already_used',
        'This payment is settled. Buyers keep access: read again with Sign-In-With-X (SIGN-IN-WITH-X) or an agent token (Authorization: Bearer) for the paying wallet',
        payment.id,
      );
    }
    const prepared = await resource.prepare(payment);
    const body = await resource.render(payment, prepared);
    return {
      kind: 'paid',
      body,
      payment,
      header: await settledHeader(deps.receipts, decoded.version, payment),
      replay: true,
    };
  }
  if (payment.status === 'failed' || payment.status === 'expired') {
    return challenge(
      payment.failure_reason ?? `payment_${payment.status}`,
      `This authorization's payment ${payment.status}`,
      payment.id,
    );
  }
  const pending = challenge('settlement_pending', '', payment.id);
  if (pending.kind !== 'challenge') throw new Error('a refusal is a challenge');
  return { kind: 'pending', payment, challenge: pending.challenge };
}

/**
 * The settlement response header of a settled payment, first answer or replay: the x402
 * SettleResponse with the signed offer-receipt receipt in its extensions. `signed` is a receipt
 * already signed for exactly this payment.
 */
export async function settledHeader(
  receipts: ReceiptIssuer | undefined,
  version: 1 | 2,
  payment: Payment,
  signed?: EIP712SignedReceipt,
): Promise<[string, string]> {
  if (!receipts) return settlementHeader(version, receiptOf(payment));
  const receipt = signed ?? (await receipts.receiptFor(payment));
  return settlementHeader(version, { ...receiptOf(payment), extensions: { [OFFER_RECEIPT]: { info: { receipt } } } });
}

/** Waits for the first request with this payment to reach a final state, or for the deadline. */
async function awaitOutcome(deps: ReplayDeps, id: string): Promise<Payment> {
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
