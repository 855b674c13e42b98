import { sql } from 'kysely';
import { executePrepared, PREPARED, type Db, type Executor } from './db.js';
import type { Payment, PaymentStatus } from './schema.js';

/** Payment states that still move: the reconciler and waiting duplicates look at these. */
export const IN_FLIGHT: PaymentStatus[] = ['pending', 'verified', 'settling'];
export const TERMINAL: PaymentStatus[] = ['settled', 'failed', 'expired'];

export interface NewPayment {
  purpose: 'registration' | 'purchase';
  protocolVersion: 1 | 2;
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amountAtomic: bigint;
  nonce: string;
  validAfter: Date;
  validBefore: Date;
  resource: string;
  postId?: string;
  registrationHandle?: string;
  registrationWallet?: string;
  /** The client's x402 payment-identifier, if it sent one (unique: one payment per identifier). */
  paymentIdentifier?: string;
  /** The signed payload exactly as received, stored as JSON: it is what a later settlement retry sends. */
  payload: object;
  /** The requirements the payload was checked against, stored as JSON beside it. */
  requirements: object;
}

export type ClaimResult =
  | { claimed: true; payment: Payment }
  | { claimed: false; conflict: 'same_authorization'; existing: Payment }
  | { claimed: false; conflict: 'same_identifier'; existing: Payment }
  | { claimed: false; conflict: 'handle_in_flight' | 'wallet_in_flight' };

/** Fields a status change may set along with the status. */
export interface TransitionFields {
  facilitator?: string;
  txHash?: string | null;
  failureReason?: string | null;
  agentId?: string;
  settledAt?: Date;
}

const lower = (a: string) => a.toLowerCase();

/** The unique index a failed insert hit, when the driver names one (PostgreSQL's `constraint` field). */
function violatedConstraint(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('constraint' in err)) return undefined;
  return typeof err.constraint === 'string' ? err.constraint : undefined;
}

/**
 * Claims an authorization: inserts the payment as `pending` unless a row for the same
 * (network, asset, payer, nonce) exists. The unique constraint, not a read-then-write, decides
 * the winner, so of twenty concurrent requests with one header exactly one proceeds.
 *
 * The claim commits without waiting for its WAL to reach disk (synchronous_commit off for this
 * one transaction). Nothing is sent for a claim before it is marked `settling` or `verified`, and
 * that commit waits for the WAL up to itself, the claim's included: a claim lost with a crash of
 * the database server is one nothing was sent for (its request then finds it gone and is refused).
 * Hence a pool, never a transaction: the relaxed commit would be the whole transaction's.
 *
 * With `settlingThrough`, the payment is inserted as `settling` with the facilitator that will
 * send it, in a commit that waits for its WAL: the claim and the mark in one statement, for a
 * facilitator that checks the payment itself and sends it only once this is done.
 */
export async function claimPayment(
  db: Db,
  p: NewPayment,
  { settlingThrough }: { settlingThrough?: string } = {},
): Promise<ClaimResult> {
  if (db.isTransaction) throw new Error('a claim commits on its own: its relaxed commit would be the transaction’s');
  try {
    const [claimed] = await executePrepared(
      db,
      db
        .insertInto('payments')
        .values({
          purpose: p.purpose,
          status: settlingThrough ? 'settling' : 'pending',
          facilitator: settlingThrough ?? null,
          settle_attempts: settlingThrough ? 1 : 0,
          protocol_version: p.protocolVersion,
          network: p.network,
          asset: lower(p.asset),
          payer: lower(p.payer),
          pay_to: lower(p.payTo),
          amount_atomic: p.amountAtomic.toString(),
          nonce: p.nonce,
          valid_after: p.validAfter,
          valid_before: p.validBefore,
          resource: p.resource,
          post_id: p.postId ?? null,
          registration_handle: p.registrationHandle ?? null,
          registration_wallet: p.registrationWallet ? lower(p.registrationWallet) : null,
          payment_identifier: p.paymentIdentifier ?? null,
          payload: JSON.stringify(p.payload),
          requirements: JSON.stringify(p.requirements),
        })
        .onConflict((oc) => oc.columns(['network', 'asset', 'payer', 'nonce']).doNothing())
        .returningAll()
        // Evaluated only for an inserted row: a conflict writes nothing and commits nothing.
        .$if(!settlingThrough, (q) =>
          q.returning(sql<string>`set_config('synchronous_commit', 'off', true)`.as('relaxed_commit')),
        ),
    );
    if (claimed) {
      const { relaxed_commit: _, ...payment } = claimed;
      return { claimed: true, payment };
    }
  } catch (err) {
    const constraint = violatedConstraint(err);
    if (constraint === 'payments_inflight_handle_idx') return { claimed: false, conflict: 'handle_in_flight' };
    if (constraint === 'payments_inflight_wallet_idx') return { claimed: false, conflict: 'wallet_in_flight' };
    if (constraint === 'payments_payment_identifier_idx' && p.paymentIdentifier) {
      const existing = await findByPaymentIdentifier(db, p.paymentIdentifier);
      if (existing) return { claimed: false, conflict: 'same_identifier', existing };
    }
    throw err;
  }
  const existing = await findByAuthorization(db, p.network, p.asset, p.payer, p.nonce);
  if (!existing) throw new Error('payment claim lost its conflicting row');
  return { claimed: false, conflict: 'same_authorization', existing };
}

/** The payment recorded for one authorization (network, asset, payer, nonce), if any. */
export function findByAuthorization(
  db: Executor,
  network: string,
  asset: string,
  payer: string,
  nonce: string,
): Promise<Payment | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('network', '=', network)
    .where('asset', '=', lower(asset))
    .where('payer', '=', lower(payer))
    .where('nonce', '=', nonce)
    .executeTakeFirst();
}

/** The payment recorded under a client's payment-identifier, if any. */
export function findByPaymentIdentifier(db: Executor, paymentIdentifier: string): Promise<Payment | undefined> {
  return db.selectFrom('payments').selectAll().where('payment_identifier', '=', paymentIdentifier).executeTakeFirst();
}

/**
 * Where a page of payments starts: after this (created_at, id), newest first. `createdAt` is the
 * stored time to the microsecond (`YYYY-MM-DDTHH:MI:SS.ffffffZ`), which a JavaScript Date would cut
 * to the millisecond and so skip rows created within the same millisecond.
 */
export interface PaymentPosition {
  createdAt: string;
  id: string;
}

/** A listed payment with its position, for the cursor of the page it ends. */
export type ListedPayment = Payment & { position: PaymentPosition };

/**
 * Payments newest first: those a wallet paid or received (`wallet`), or those a settlement
 * transaction carried (`txHash`); at most `limit`, after `after` when given.
 */
export async function listPayments(
  db: Executor,
  by: { wallet: string } | { txHash: string },
  limit: number,
  after?: PaymentPosition,
): Promise<ListedPayment[]> {
  let q = db
    .selectFrom('payments')
    .selectAll()
    .select(sql<string>`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('created_at_us'));
  if ('wallet' in by) {
    const wallet = lower(by.wallet);
    q = q.where((eb) => eb.or([eb('payer', '=', wallet), eb('pay_to', '=', wallet)]));
  } else q = q.where('tx_hash', '=', lower(by.txHash));
  if (after) q = q.where(sql<boolean>`(created_at, id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)`);
  const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map(({ created_at_us, ...p }) => ({ ...p, position: { createdAt: created_at_us, id: p.id } }));
}

/** One payment by id, if it exists. */
export function findPayment(db: Executor, id: string): Promise<Payment | undefined> {
  return db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A payment marked settled: by which transaction (and facilitator), and when. */
export interface SettledFields {
  id: string;
  txHash: string;
  facilitator: string | undefined;
  settledAt: Date;
  /**
   * For a purchase, the version of the skill its request served; unknown (a settlement found on
   * chain by the retry job), the post's current version.
   */
  postVersion?: number;
}

/** Moves a payment from one of `from` to `to`; returns the row, or undefined if it was not in `from`. */
export function transition(
  db: Executor,
  id: string,
  from: PaymentStatus[],
  to: PaymentStatus,
  fields: TransitionFields = {},
): Promise<Payment | undefined> {
  return db
    .updateTable('payments')
    .set({
      status: to,
      updated_at: new Date(),
      ...(fields.facilitator !== undefined ? { facilitator: fields.facilitator } : {}),
      ...(fields.txHash !== undefined ? { tx_hash: fields.txHash } : {}),
      ...(fields.failureReason !== undefined ? { failure_reason: fields.failureReason } : {}),
      ...(fields.agentId !== undefined ? { agent_id: fields.agentId } : {}),
      ...(fields.settledAt !== undefined ? { settled_at: fields.settledAt } : {}),
      ...(to === 'settling' ? { settle_attempts: sql<number>`settle_attempts + 1` } : {}),
    })
    .where('id', '=', id)
    .where('status', 'in', from)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Fails a payment that is in one of `from`, and for a purchase records `payment.failed` for the
 * skill's seller in the same statement (the outbox: its webhook goes out only if this commits).
 * Returns the row, or undefined if the payment was not in `from`.
 */
export async function failPayment(
  db: Executor,
  id: string,
  from: PaymentStatus[],
  fields: { failureReason: string; facilitator?: string },
): Promise<Payment | undefined> {
  const { rows } = await sql<Payment>`
    WITH failed AS (
      UPDATE payments
      SET status = 'failed', updated_at = ${new Date()}, failure_reason = ${fields.failureReason},
          facilitator = coalesce(${fields.facilitator ?? null}::text, facilitator)
      WHERE id = ${id} AND status = ANY(${from}::text[])
      RETURNING *
    ), told AS (
      INSERT INTO domain_events (type, agent_id, post_id, payload)
      SELECT 'payment.failed', p.author_id, f.post_id,
             jsonb_build_object('paymentId', f.id, 'buyer', f.payer, 'amount', f.amount_atomic::text,
                                'reason', f.failure_reason,
                                'buyerAgentId', (SELECT a.id FROM agents a WHERE a.wallet_address = f.payer))
      FROM failed f JOIN posts p ON p.id = f.post_id
      WHERE f.purpose = 'purchase'
    )
    SELECT * FROM failed`.execute(db);
  return rows[0];
}

/**
 * Moves payments from `pending` or `verified` to `settling` with the facilitator that will settle
 * each, in one statement; returns the rows moved (a payment no longer in those states is not).
 */
export async function markSettling(db: Executor, list: Array<{ id: string; facilitator: string }>): Promise<Payment[]> {
  if (!list.length) return [];
  const { rows } = await sql<Payment>`${PREPARED}
    UPDATE payments AS pay
    SET status = 'settling', updated_at = ${new Date()}, facilitator = g.facilitator,
        settle_attempts = pay.settle_attempts + 1
    FROM unnest(${list.map((p) => p.id)}::uuid[], ${list.map((p) => p.facilitator)}::text[]) AS g(id, facilitator)
    WHERE pay.id = g.id AND pay.status IN ('pending', 'verified')
    RETURNING pay.*`.execute(db);
  return rows;
}

/** Records the agent a settled registration created on its payment; returns the updated row. */
export function savePaymentAgent(db: Executor, id: string, agentId: string): Promise<Payment> {
  return db
    .updateTable('payments')
    .set({ agent_id: agentId })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Forgets a claim that never reached the chain (no facilitator answered, or the resource could
 * not be delivered), so the payer may send the same authorization again later.
 */
export async function releaseClaim(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('payments').where('id', '=', id).where('status', 'in', ['pending', 'verified']).execute();
}

/**
 * Forgets a claim whose signature is not its payer's: nothing was or can be sent for it, and a row
 * in a stranger's name would show in that wallet's list of payments for good.
 */
export async function discardForgedClaim(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('payments').where('id', '=', id).where('status', 'in', IN_FLIGHT).execute();
}

/** Moves an unresolved payment to the back of the reconciler's list, so stuck ones cannot starve the rest. */
export async function touchPayment(db: Executor, id: string): Promise<void> {
  await db.updateTable('payments').set({ updated_at: new Date() }).where('id', '=', id).execute();
}

/** Payments stuck in flight for longer than `olderThanMs`: the reconciler's work list. */
export function findStuck(
  db: Executor,
  olderThanMs: number,
  limit = 100,
): Promise<Array<Pick<Payment, 'id' | 'status'>>> {
  return db
    .selectFrom('payments')
    .select(['id', 'status'])
    .where('status', 'in', IN_FLIGHT)
    .where('updated_at', '<', new Date(Date.now() - olderThanMs))
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

/** What a payment receipt states about a settled payment, and where it was paid. */
export type SettlementFacts = Pick<
  Payment,
  'id' | 'status' | 'network' | 'resource' | 'payer' | 'pay_to' | 'tx_hash' | 'settled_at'
>;

/**
 * The settlement facts of these payments (the ones sales were paid with), in no particular order:
 * only the columns a receipt states, not the stored authorization and requirements, which a
 * reputation mirror of a hundred sales would otherwise read a hundred of.
 */
export async function findSettlementFacts(db: Executor, ids: string[]): Promise<SettlementFacts[]> {
  if (!ids.length) return [];
  const { rows } = await sql<SettlementFacts>`
    SELECT id, status, network, resource, payer, pay_to, tx_hash, settled_at
    FROM payments WHERE id = ANY(${ids}::uuid[])`.execute(db);
  return rows;
}

/**
 * Records a Sign-In-With-X nonce as used. Returns false when it was used already: the primary
 * key, not a read before the write, decides, so of two concurrent copies of a header one wins.
 */
export async function recordSiwxNonce(
  db: Executor,
  used: { nonce: string; address: string; resource: string },
): Promise<boolean> {
  const row = await db
    .insertInto('siwx_used_nonces')
    .values({ nonce: used.nonce, address: used.address.toLowerCase(), resource: used.resource })
    .onConflict((oc) => oc.column('nonce').doNothing())
    .returning('nonce')
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether a nonce granted access already. */
export async function isSiwxNonceUsed(db: Executor, nonce: string): Promise<boolean> {
  const row = await db.selectFrom('siwx_used_nonces').select('nonce').where('nonce', '=', nonce).executeTakeFirst();
  return row !== undefined;
}

/** Forgets used nonces older than `olderThanMs`: messages that old are refused by their age anyway. */
export async function purgeSiwxNonces(db: Executor, olderThanMs: number): Promise<number> {
  const result = await db
    .deleteFrom('siwx_used_nonces')
    .where('used_at', '<', new Date(Date.now() - olderThanMs))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
