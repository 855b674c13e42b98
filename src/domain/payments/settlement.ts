import type { Transaction } from 'kysely';
import type { Db } from '../../data/db.js';
import type { DB, Payment, PaymentStatus } from '../../data/schema.js';
import { transition } from './payments.repository.js';

/**
 * What a settled payment bought, recorded in the same transaction that marks it settled, so a
 * payment is never settled without its effect nor its effect recorded twice. One handler per
 * purpose (registration creates the agent; a purchase records the entitlement).
 */
export type SettlementEffect = (trx: Transaction<DB>, payment: Payment) => Promise<{ agentId?: string } | void>;

const effects = new Map<Payment['purpose'], SettlementEffect>();

export function registerSettlementEffect(purpose: Payment['purpose'], effect: SettlementEffect): void {
  effects.set(purpose, effect);
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
 * authorization), returns that row unchanged and applies nothing.
 */
export async function finalizeSettlement(db: Db, paymentId: string, txHash: string, facilitator?: string): Promise<Payment> {
  return db.transaction().execute(async (trx) => {
    // The guard, not a read before it, decides who applies the effect: a concurrent finalize
    // waits for this row's lock and then finds it no longer settleable.
    const settled = await transition(trx, paymentId, SETTLEABLE, 'settled', {
      txHash,
      facilitator,
      settledAt: new Date(),
      failureReason: null,
    });
    if (!settled) return trx.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
    const effect = effects.get(settled.purpose);
    const out = effect ? await effect(trx, settled) : undefined;
    if (out && out.agentId) {
      return (await trx
        .updateTable('payments')
        .set({ agent_id: out.agentId })
        .where('id', '=', paymentId)
        .returningAll()
        .executeTakeFirstOrThrow());
    }
    return settled;
  });
}
