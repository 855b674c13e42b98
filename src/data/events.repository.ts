import { sql } from 'kysely';
import type { Executor } from './db.js';

/** An outbox row as the dispatcher reads it. */
export interface DomainEventRow {
  id: string;
  type: string;
  agent_id: string | null;
  post_id: string | null;
  payload: Record<string, unknown>;
}

/** How long a claim on undispatched events lasts before another dispatcher may take them. */
export const EVENT_CLAIM_SECONDS = 30;

/**
 * Claims up to `limit` undispatched events whose claim is free or ran out, oldest first, for
 * EVENT_CLAIM_SECONDS. SKIP LOCKED lets any number of dispatchers claim at once without waiting
 * on each other or taking the same rows.
 */
export async function claimPendingEvents(db: Executor, limit: number): Promise<DomainEventRow[]> {
  const claimed = await sql<DomainEventRow>`
    UPDATE domain_events SET claimed_until = now() + ${EVENT_CLAIM_SECONDS} * interval '1 second'
    WHERE id IN (
      SELECT id FROM domain_events
      WHERE dispatched_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id, type, agent_id, post_id, payload`.execute(db);
  return claimed.rows;
}

/** Gives claimed events back at once, for the next pass of any dispatcher. */
export async function releaseEventClaims(db: Executor, ids: string[]): Promise<void> {
  await db.updateTable('domain_events').set({ claimed_until: null }).where('id', 'in', ids).execute();
}

/** Marks events dispatched: no dispatcher claims them again. */
export async function markEventsDispatched(db: Executor, ids: string[]): Promise<void> {
  await db.updateTable('domain_events').set({ dispatched_at: new Date() }).where('id', 'in', ids).execute();
}

/** Records a domain event (the outbox the dispatcher reads) in the caller's transaction. */
export async function insertEvent(
  trx: Executor,
  type: string,
  fields: { agentId?: string; postId?: string; payload?: Record<string, unknown> },
): Promise<void> {
  await trx
    .insertInto('domain_events')
    .values({
      type,
      agent_id: fields.agentId ?? null,
      post_id: fields.postId ?? null,
      payload: JSON.stringify(fields.payload ?? {}),
    })
    .execute();
}
