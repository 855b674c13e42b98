import type { Transaction } from 'kysely';
import type { Db } from '../../../data/db.js';
import { findPayment, savePaymentAgent, transition, type SettledFields } from '../../../data/payments.repository.js';
import type { DB, Payment, PaymentStatus } from '../../../data/schema.js';
import { AppError } from '../../../platform/errors.js';

/**
 * What a settled payment bought, recorded with the payment marked settled, atomically, so a
 * payment is never settled without its effect nor its effect recorded twice. One per purpose
 * (registration creates the agent; a purchase records the entitlement), in one of two forms:
 * - a function applied inside the transaction that marks the payment settled;
 * - `settle`, one statement that marks the payment settled (from one of SETTLEABLE) and records
 *   the effect (one round trip instead of four on the paid path), returning the settled row, or
 *   undefined when the payment was not settleable (already settled, or what it bought is not
 *   recorded).
 */
export type SettlementEffect =
  | ((trx: Transaction<DB>, payment: Payment) => Promise<{ agentId?: string } | undefined>)
  | { settle(db: Db, fields: SettledFields): Promise<Payment | undefined> };

/**
 * The effect of every payment purpose, handed to whatever settles payments. A record with a key
 * per purpose, so leaving one out (or adding a purpose without its effect) does not compile: a
 * payment settled without its effect takes the buyer's money and delivers nothing.
 */
export type SettlementEffects = { readonly [P in Payment['purpose']]: SettlementEffect };

/** A payment whose purpose has no effect: settling it would take the money and deliver nothing. */
export class MissingSettlementEffectError extends AppError {
  constructor(readonly purpose: string) {
    super(
      500,
      'settlement_effect_missing',
      `No settlement effect for payment purpose "${purpose}"; the payment is left unsettled`,
    );
  }
}

/**
 * Every state a payment can be settled from. The callers hold a transaction that used this
 * authorization (a facilitator's successful settle, or the chain's `AuthorizationUsed` log), and
 * the chain is the truth: a payment marked `failed` or `expired` by a process that looked before
 * that transaction was mined is settled all the same. Only `settled` itself is not left.
 */
export const SETTLEABLE: PaymentStatus[] = ['pending', 'verified', 'settling', 'failed', 'expired'];

/**
 * Marks a payment settled with its transaction hash and applies its effect, once. Returns the
 * settled row; if it is settled already (another process recorded the same use of the
 * authorization), returns that row unchanged and applies nothing. A purpose without an effect
 * throws before anything is written, and so does an effect that could not record what was
 * bought: the payment stays in flight and the reconciler keeps retrying it, loudly, instead of
 * recording it settled with nothing delivered.
 */
export async function finalizeSettlement(
  db: Db,
  effects: SettlementEffects,
  payment: Pick<Payment, 'id' | 'purpose'>,
  txHash: string,
  facilitator?: string,
  { settledAt = new Date(), postVersion }: { settledAt?: Date; postVersion?: number } = {},
): Promise<Payment> {
  // An own-property lookup: the purpose comes from the database, and a name like "constructor"
  // must not find something on Object.prototype.
  const effect = Object.hasOwn(effects, payment.purpose) ? effects[payment.purpose] : undefined;
  if (typeof effect === 'object' && effect !== null && typeof effect.settle === 'function') {
    const settled = await effect.settle(db, { id: payment.id, txHash, facilitator, settledAt, postVersion });
    if (settled) return settled;
    const current = await findPayment(db, payment.id);
    if (!current) throw new Error(`payment ${payment.id} is not recorded`);
    if (current.status !== 'settled')
      throw new Error(`payment ${payment.id} could not be settled: what it paid for is not recorded`);
    return current;
  }
  if (typeof effect !== 'function') throw new MissingSettlementEffectError(payment.purpose);
  return db.transaction().execute(async (trx) => {
    // The guard, not a read before it, decides who applies the effect: a concurrent finalize
    // waits for this row's lock and then finds it no longer settleable.
    const settled = await transition(trx, payment.id, SETTLEABLE, 'settled', {
      txHash,
      facilitator,
      settledAt,
      failureReason: null,
    });
    if (!settled) {
      const current = await findPayment(trx, payment.id);
      if (!current) throw new Error(`payment ${payment.id} is not recorded`);
      return current;
    }
    const out = await effect(trx, settled);
    if (out?.agentId) return await savePaymentAgent(trx, payment.id, out.agentId);
    return settled;
  });
}
