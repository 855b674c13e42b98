import type { Transaction } from 'kysely';
import type { Db } from '../../data/db.js';
import { findPayment, savePaymentAgent, transition } from '../../data/payments.repository.js';
import type { DB, Payment, PaymentStatus } from '../../data/schema.js';
import { AppError } from '../../platform/errors.js';

/**
 * What a settled payment bought, recorded in the same transaction that marks it settled, so a
 * payment is never settled without its effect nor its effect recorded twice. One handler per
 * purpose (registration creates the agent; a purchase records the entitlement).
 */
export type SettlementEffect = (trx: Transaction<DB>, payment: Payment) => Promise<{ agentId?: string } | undefined>;

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
const SETTLEABLE: PaymentStatus[] = ['pending', 'verified', 'settling', 'failed', 'expired'];

/**
 * Marks a payment settled with its transaction hash and applies its effect, once. Returns the
 * settled row; if it is settled already (another process recorded the same use of the
 * authorization), returns that row unchanged and applies nothing. A purpose without an effect
 * throws, which rolls the transaction back: the payment stays in flight and the reconciler
 * keeps retrying it, loudly, instead of recording it settled with nothing delivered.
 */
export async function finalizeSettlement(
  db: Db,
  effects: SettlementEffects,
  paymentId: string,
  txHash: string,
  facilitator?: string,
  settledAt: Date = new Date(),
): Promise<Payment> {
  return db.transaction().execute(async (trx) => {
    // The guard, not a read before it, decides who applies the effect: a concurrent finalize
    // waits for this row's lock and then finds it no longer settleable.
    const settled = await transition(trx, paymentId, SETTLEABLE, 'settled', {
      txHash,
      facilitator,
      settledAt,
      failureReason: null,
    });
    if (!settled) {
      const current = await findPayment(trx, paymentId);
      if (!current) throw new Error(`payment ${paymentId} is not recorded`);
      return current;
    }
    // An own-property lookup: the purpose comes from the database, and a name like "constructor"
    // must not find something on Object.prototype.
    const effect = Object.hasOwn(effects, settled.purpose) ? effects[settled.purpose] : undefined;
    if (typeof effect !== 'function') throw new MissingSettlementEffectError(settled.purpose);
    const out = await effect(trx, settled);
    if (out?.agentId) return await savePaymentAgent(trx, paymentId, out.agentId);
    return settled;
  });
}
