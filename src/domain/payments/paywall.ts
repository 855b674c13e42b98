import type { SettleResponse } from '@x402/core/types';
import type { Db } from '../../data/db.js';
import type { Payment } from '../../data/schema.js';
import type { Logger } from '../../platform/logger.js';
import { ConflictError, ServiceUnavailableError } from '../../platform/errors.js';
import { sleep } from '../../platform/net.js';
import { AllFacilitatorsUnavailableError, SettlementIndeterminateError, type FacilitatorPool } from './facilitators.js';
import {
  claimPayment,
  findByAuthorization,
  findPayment,
  releaseClaim,
  transition,
  TERMINAL,
} from './payments.repository.js';
import { finalizeSettlement, type SettlementEffects } from './settlement.js';
import {
  challengeFor,
  decodePaymentHeader,
  PaymentHeaderError,
  requirementsV1,
  requirementsV2,
  settlementHeader,
  v1NetworkName,
  type Challenge,
  type DecodedPayment,
  type PaymentTerms,
} from './x402-codec.js';

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
  /** The response body for a settled payment: the first time, and again for a replay of the same header. */
  render(payment: Payment, prepared: Prepared): Promise<unknown>;
  /**
   * Whether a request that repeats an already settled payment may get its answer again. Settling
   * publishes the signed authorization on chain, so repeating it proves nothing by itself: only a
   * resource that can tell the payer apart (a registration's signed-in wallet) says yes.
   */
  mayRedeliver?(payment: Payment): boolean;
}

export type PaywallOutcome =
  | { kind: 'challenge'; reason: string; detail: string; challenge: Challenge; paymentId?: string }
  | { kind: 'paid'; body: unknown; payment: Payment; header: [string, string]; replay: boolean }
  | { kind: 'pending'; payment: Payment; challenge: Challenge };

export interface PaywallTimings {
  facilitatorMs: number;
}

export interface PaywallDeps {
  db: Db;
  facilitators: FacilitatorPool;
  /** What each purpose buys, applied when its payment is marked settled. */
  settlementEffects: SettlementEffects;
  log: Logger;
  /** Hands a settlement whose outcome is unknown to the retry job. */
  enqueueSettlement(paymentId: string): Promise<void>;
  /** How long a duplicate request waits for the first one's outcome. */
  duplicateWaitMs?: number;
}

/** Seconds a signed authorization must still be valid for when it reaches us (facilitators require 6). */
const MIN_VALIDITY_SECONDS = 6n;
/** The furthest expiry we accept: a day. Longer-lived authorizations are refused, not stored. */
const MAX_VALIDITY_SECONDS = 86_400n;

/**
 * The x402 flow for one request: decode the payment header, check it against our terms,
 * claim its authorization (one payment per authorization), verify with a facilitator, prepare
 * the delivery, settle, record what was bought, and answer. Money moves only in `settle`, and
 * only after verification and a successful `prepare`.
 */
export class Paywall {
  constructor(private readonly deps: PaywallDeps) {}

  async process<P>(
    headers: { v1?: string; v2?: string },
    resource: PaidResource<P>,
    timings?: PaywallTimings,
  ): Promise<PaywallOutcome> {
    const { terms } = resource;
    const challenge = (reason: string, detail: string, paymentId?: string): PaywallOutcome => ({
      kind: 'challenge',
      reason,
      detail,
      paymentId,
      challenge: challengeFor(terms, reason, paymentId ? { paymentId } : {}),
    });

    let decoded: DecodedPayment | undefined;
    try {
      decoded = decodePaymentHeader(headers);
    } catch (err) {
      if (err instanceof PaymentHeaderError) return challenge('invalid_payment_header', err.message);
      throw err;
    }
    if (!decoded) return challenge('payment_required', 'Pay with X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2)');

    const mismatch = checkTerms(decoded, terms);
    if (mismatch) return challenge(mismatch.reason, mismatch.detail);

    const { authorization: auth } = decoded;
    const requirements = decoded.version === 2 ? requirementsV2(terms) : requirementsV1(terms)!;
    const claim = await claimPayment(this.deps.db, {
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
      payload: decoded.payload as unknown as Record<string, unknown>,
      requirements: requirements as unknown as Record<string, unknown>,
    });
    if (!claim.claimed) {
      if (claim.conflict === 'same_authorization') return this.replay(claim.existing, decoded, resource, challenge);
      if (claim.conflict === 'handle_in_flight')
        throw new ConflictError('Another registration for this handle is being paid right now', 'handle_taken');
      throw new ConflictError('Another registration for this wallet is being paid right now', 'wallet_registered');
    }

    const payment = claim.payment;
    let prepared: P;
    try {
      prepared = await resource.prepare(payment);
    } catch (err) {
      await releaseClaim(this.deps.db, payment.id);
      throw err;
    }

    // The x402 flow verifies, delivers, then settles. Here delivery is prepared before and rendered
    // after settlement, so when the facilitator's settle verifies by itself, verifying first would
    // only repeat it.
    let settler = this.deps.facilitators.settlerThatVerifies();
    if (!settler) {
      const verifyStarted = performance.now();
      let verified;
      try {
        verified = await this.deps.facilitators.verify(decoded.payload, requirements as never);
      } catch (err) {
        await releaseClaim(this.deps.db, payment.id);
        throw this.unavailable(err);
      } finally {
        if (timings) timings.facilitatorMs += performance.now() - verifyStarted;
      }
      if (!verified.result.isValid) {
        const reason = verified.result.invalidReason ?? 'payment_invalid';
        await transition(this.deps.db, payment.id, ['pending'], 'failed', {
          failureReason: reason,
          facilitator: verified.facilitator,
        });
        return challenge(
          reason,
          verified.result.invalidMessage ?? `The facilitator refused the payment: ${reason}`,
          payment.id,
        );
      }
      await transition(this.deps.db, payment.id, ['pending'], 'verified', { facilitator: verified.facilitator });
      settler = verified.facilitator;
    }
    if (!(await transition(this.deps.db, payment.id, ['pending', 'verified'], 'settling', { facilitator: settler }))) {
      // The reconciler gave this claim up (the request took minutes): do not settle what nobody tracks.
      return challenge(
        'payment_claim_expired',
        'This payment took too long to process and was released; send it again',
        undefined,
      );
    }

    const settleStarted = performance.now();
    let settled: { result: SettleResponse; facilitator: string };
    try {
      settled = await this.deps.facilitators.settle(decoded.payload, requirements as never, settler);
    } catch (err) {
      if (err instanceof SettlementIndeterminateError) {
        try {
          await this.deps.enqueueSettlement(payment.id);
          this.deps.log.warn(
            { paymentId: payment.id, err: err.message },
            'settlement outcome unknown; handed to the retry job',
          );
        } catch (enqueueErr) {
          // The payment is durable in status settling, so the answer does not depend on the queue:
          // the reconciler finds it and queues the retry once Redis answers again.
          this.deps.log.warn(
            { paymentId: payment.id, err: err.message, enqueueErr },
            'settlement outcome unknown and the retry job could not be queued; the reconciler will queue it',
          );
        }
        const current = (await findPayment(this.deps.db, payment.id))!;
        return {
          kind: 'pending',
          payment: current,
          challenge: challengeFor(terms, 'settlement_pending', { paymentId: payment.id }),
        };
      }
      // No facilitator would even take the call: nothing was sent, nothing is charged.
      await transition(this.deps.db, payment.id, ['settling'], 'verified');
      await releaseClaim(this.deps.db, payment.id);
      throw this.unavailable(err);
    } finally {
      if (timings) timings.facilitatorMs += performance.now() - settleStarted;
    }
    if (!settled.result.success) {
      const reason = settled.result.errorReason ?? 'settlement_failed';
      await transition(this.deps.db, payment.id, ['settling'], 'failed', {
        failureReason: reason,
        facilitator: settled.facilitator,
      });
      return challenge(reason, settled.result.errorMessage ?? `Settlement failed: ${reason}`, payment.id);
    }
    // The payment may have been resolved meanwhile by the retry job, from this same use of the
    // authorization: settled already, it is delivered as is; marked failed or expired by a look
    // at the chain before this transaction was mined, it is settled now (see finalizeSettlement).
    const final = await finalizeSettlement(
      this.deps.db,
      this.deps.settlementEffects,
      payment.id,
      settled.result.transaction,
      settled.facilitator,
    );
    if (final.tx_hash?.toLowerCase() !== settled.result.transaction.toLowerCase()) {
      // One authorization is used once on chain, so two transactions for it mean a facilitator
      // reported a settlement the chain does not hold: the ledger keeps the one recorded first.
      this.deps.log.warn(
        {
          paymentId: payment.id,
          recorded: final.tx_hash,
          reported: settled.result.transaction,
          facilitator: settled.facilitator,
        },
        'settled payment recorded with another transaction than its facilitator reported',
      );
    }
    const body = await resource.render(final, prepared);
    return {
      kind: 'paid',
      body,
      payment: final,
      header: settlementHeader(decoded.version, receiptOf(final)),
      replay: false,
    };
  }

  /**
   * The same authorization again. It is the same payment only if it is the same signed payload
   * (a forged header that borrows a used nonce from the chain is not). While the first request is
   * in flight, a copy waits for its outcome and gets the same answer; once settled, the signed
   * authorization is public on chain, so a copy gets the answer again only when the resource can
   * tell it comes from the payer.
   */
  private async replay<P>(
    existing: Payment,
    decoded: DecodedPayment,
    resource: PaidResource<P>,
    challenge: (reason: string, detail: string, paymentId?: string) => PaywallOutcome,
  ): Promise<PaywallOutcome> {
    if (!samePayment(existing.payload, decoded)) {
      return challenge('invalid_exact_evm_nonce_already_used', 'This authorization nonce belongs to another payment');
    }
    if (existing.resource !== resource.terms.resourceUrl || existing.purpose !== resource.purpose) {
      return challenge('payment_already_used', 'This authorization already paid for another resource', existing.id);
    }
    const settledBefore = existing.status === 'settled';
    const payment = await this.awaitOutcome(existing.id);
    if (payment.status === 'settled') {
      if (settledBefore && !resource.mayRedeliver?.(payment)) {
        return challenge(
          'payment_already_used',
          'This payment is settled. Buyers keep access: read again with an agent token (Authorization: Bearer) for the paying wallet',
          payment.id,
        );
      }
      const prepared = await resource.prepare(payment);
      const body = await resource.render(payment, prepared);
      return {
        kind: 'paid',
        body,
        payment,
        header: settlementHeader(decoded.version, receiptOf(payment)),
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
    return {
      kind: 'pending',
      payment,
      challenge: challengeFor(resource.terms, 'settlement_pending', { paymentId: payment.id }),
    };
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

  private async awaitOutcome(id: string): Promise<Payment> {
    const deadline = Date.now() + (this.deps.duplicateWaitMs ?? 20_000);
    let delay = 20;
    for (;;) {
      const p = await findPayment(this.deps.db, id);
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

  private unavailable(err: unknown): Error {
    if (err instanceof AllFacilitatorsUnavailableError) {
      this.deps.log.warn({ errors: err.errors }, 'no facilitator available');
      return new ServiceUnavailableError(
        'No payment facilitator is available right now; nothing was charged',
        err.retryAfterSeconds,
        'facilitator_unavailable',
      );
    }
    return err as Error;
  }
}

/** Checks the signed authorization against our terms before any facilitator or database work. */
export function checkTerms(d: DecodedPayment, t: PaymentTerms): { reason: string; detail: string } | undefined {
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
  const now = BigInt(Math.floor(Date.now() / 1000));
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

/** Whether a stored payload and a decoded header carry the same signed authorization (either protocol version). */
function samePayment(stored: Record<string, unknown>, decoded: DecodedPayment): boolean {
  const inner = (stored as { payload?: { signature?: unknown; authorization?: Record<string, unknown> } }).payload;
  const storedSig = String(inner?.signature ?? '').toLowerCase();
  const signature = String((decoded.payload.payload as { signature?: unknown }).signature ?? '').toLowerCase();
  if (!storedSig || storedSig !== signature) return false;
  const a = inner?.authorization ?? {};
  const d = decoded.authorization;
  return (
    String(a.from).toLowerCase() === d.from.toLowerCase() &&
    String(a.to).toLowerCase() === d.to.toLowerCase() &&
    String(a.value) === d.value.toString() &&
    String(a.validAfter) === d.validAfter.toString() &&
    String(a.validBefore) === d.validBefore.toString() &&
    String(a.nonce).toLowerCase() === d.nonce
  );
}

/** The settlement receipt of a settled payment, in the x402 SettleResponse shape. */
export function receiptOf(p: Payment): SettleResponse {
  return {
    success: true,
    transaction: p.tx_hash ?? '',
    network: p.network as SettleResponse['network'],
    payer: p.payer,
  };
}
