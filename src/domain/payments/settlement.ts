import type { Transaction } from 'kysely';
import type { Db } from '../../data/db.js';
import type { DB, Payment } from '../../data/schema.js';
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
 * Marks a payment settled with its transaction hash and applies its effect, once. Returns the
 * settled row; if another process already settled it, returns that row unchanged.
 */
export async function finalizeSettlement(db: Db, paymentId: string, txHash: string, facilitator?: string): Promise<Payment> {
  return db.transaction().execute(async (trx) => {
    const settled = await transition(trx, paymentId, ['pending', 'verified', 'settling', 'expired'], 'settled', {
      txHash,
      facilitator,
      settledAt: new Date(),
      failureReason: null,
    });
    if (!settled) {
      const current = await trx.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
      if (current.status === 'settled') return current;
      throw new Error(`payment ${paymentId} is ${current.status} and cannot be settled`);
    }
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
