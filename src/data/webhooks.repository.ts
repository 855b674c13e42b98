import { sql, type Selectable } from 'kysely';
import type { Db, Executor } from './db.js';
import { insertEvent } from './events.repository.js';
import type { WebhookDeliveries, WebhookEndpoints } from './schema.generated.js';

export type WebhookEndpoint = Selectable<WebhookEndpoints>;
export type WebhookDelivery = Selectable<WebhookDeliveries>;

/** How many endpoints an agent has. */
export async function countEndpoints(db: Executor, agentId: string): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('agent_id', '=', agentId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Inserts an endpoint unless the agent has `max` already (counted under a lock on the agent's
 * row, so two concurrent creations cannot both pass the count); undefined when at the limit.
 */
export async function insertEndpoint(
  db: Db,
  e: { agentId: string; url: string; eventTypes: string[]; description: string; secret: string },
  max: number,
): Promise<WebhookEndpoint | undefined> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT 1 FROM agents WHERE id = ${e.agentId} FOR UPDATE`.execute(trx);
    if ((await countEndpoints(trx, e.agentId)) >= max) return undefined;
    return trx
      .insertInto('webhook_endpoints')
      .values({
        agent_id: e.agentId,
        url: e.url,
        event_types: e.eventTypes,
        description: e.description,
        secret: e.secret,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/** An agent's endpoints, oldest first. */
export function listEndpoints(db: Executor, agentId: string): Promise<WebhookEndpoint[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** One of an agent's endpoints (undefined when it is not the agent's). */
export function findEndpoint(db: Executor, agentId: string, id: string): Promise<WebhookEndpoint | undefined> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('agent_id', '=', agentId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Changes an endpoint; enabling it again clears why it was disabled. */
export function updateEndpoint(
  db: Executor,
  agentId: string,
  id: string,
  patch: { url?: string; eventTypes?: string[]; description?: string; enabled?: boolean },
): Promise<WebhookEndpoint | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({
      ...(patch.url !== undefined ? { url: patch.url } : {}),
      ...(patch.eventTypes !== undefined ? { event_types: patch.eventTypes } : {}),
      ...(patch.description !== undefined ? { description: patch.description } : {}),
      ...(patch.enabled === true ? { status: 'enabled', disabled_reason: null, disabled_at: null } : {}),
      ...(patch.enabled === false
        ? { status: 'disabled', disabled_reason: 'by its owner', disabled_at: new Date() }
        : {}),
      updated_at: new Date(),
    })
    .where('agent_id', '=', agentId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes an endpoint with its deliveries (their queued jobs then find nothing to send). */
export async function deleteEndpoint(db: Executor, agentId: string, id: string): Promise<boolean> {
  const done = await db
    .deleteFrom('webhook_endpoints')
    .where('agent_id', '=', agentId)
    .where('id', '=', id)
    .executeTakeFirst();
  return done.numDeletedRows > 0n;
}

/** Replaces the secret; the one it replaces still signs until `previousUntil`. */
export function rotateSecret(
  db: Executor,
  agentId: string,
  id: string,
  secret: string,
  previousUntil: Date,
): Promise<WebhookEndpoint | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set((eb) => ({
      previous_secret: eb.ref('secret'),
      previous_secret_until: previousUntil,
      secret,
      updated_at: new Date(),
    }))
    .where('agent_id', '=', agentId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** The agent's enabled endpoints that listen to `type`. */
export function subscribedEndpoints(db: Executor, agentId: string, type: string): Promise<WebhookEndpoint[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('agent_id', '=', agentId)
    .where('status', '=', 'enabled')
    .where(sql<boolean>`${type} = ANY (event_types)`)
    .execute();
}

export interface NewDelivery {
  endpointId: string;
  messageId: string;
  eventType: string;
  eventId: string | null;
  payload: Record<string, unknown>;
  maxAttempts: number;
}

/**
 * Records first deliveries; one already recorded for the same endpoint and message is left as it
 * is (the fan-out ran before). Returns the ids of every first delivery of these messages to these
 * endpoints that no attempt was made for yet: what the caller queues (job ids deduplicate).
 */
export async function insertDeliveries(db: Executor, rows: NewDelivery[]): Promise<string[]> {
  if (!rows.length) return [];
  await db
    .insertInto('webhook_deliveries')
    .values(
      rows.map((r) => ({
        endpoint_id: r.endpointId,
        message_id: r.messageId,
        event_type: r.eventType,
        event_id: r.eventId,
        payload: JSON.stringify(r.payload),
        max_attempts: r.maxAttempts,
      })),
    )
    .onConflict((oc) => oc.columns(['endpoint_id', 'message_id', 'redelivery']).doNothing())
    .execute();
  const found = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where(
      'message_id',
      'in',
      rows.map((r) => r.messageId),
    )
    .where(
      'endpoint_id',
      'in',
      rows.map((r) => r.endpointId),
    )
    .where('redelivery', '=', 0)
    .where('status', '=', 'pending')
    .where('attempts', '=', 0)
    .execute();
  return found.map((r) => r.id);
}

/** Whether a delivery of a message to an endpoint is still pending (first delivery or redelivery). */
export async function hasPendingDelivery(db: Executor, endpointId: string, messageId: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('endpoint_id', '=', endpointId)
    .where('message_id', '=', messageId)
    .where('status', '=', 'pending')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** A new delivery of a past message to its endpoint: the next redelivery number, attempts afresh. */
export async function insertRedelivery(db: Db, of: WebhookDelivery, maxAttempts: number): Promise<WebhookDelivery> {
  return db
    .insertInto('webhook_deliveries')
    .values((eb) => ({
      endpoint_id: of.endpoint_id,
      message_id: of.message_id,
      event_type: of.event_type,
      event_id: of.event_id,
      payload: JSON.stringify(of.payload),
      max_attempts: maxAttempts,
      redelivery: eb
        .selectFrom('webhook_deliveries')
        .select(sql<number>`coalesce(max(redelivery), 0) + 1`.as('n'))
        .where('endpoint_id', '=', of.endpoint_id)
        .where('message_id', '=', of.message_id),
    }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A delivery with what sending it needs from its endpoint; undefined when it or its endpoint is gone. */
export function deliveryToSend(db: Executor, id: string) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.endpoint_id',
      'd.message_id',
      'd.event_type',
      'd.payload',
      'd.status',
      'd.attempts',
      'd.max_attempts',
      'd.created_at',
      'e.agent_id',
      'e.url',
      'e.secret',
      'e.previous_secret',
      'e.previous_secret_until',
      'e.status as endpoint_status',
    ])
    .where('d.id', '=', id)
    .executeTakeFirst();
}

/** What one attempt came to, and the delivery's state after it. */
export async function recordAttempt(
  db: Executor,
  id: string,
  a: {
    attempt: number;
    at: Date;
    status: 'pending' | 'succeeded' | 'failed';
    nextAttemptAt: Date | null;
    responseStatus: number | null;
    latencyMs: number;
    excerpt: string | null;
    error: string | null;
  },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({
      attempts: a.attempt,
      last_attempt_at: a.at,
      status: a.status,
      ...(a.nextAttemptAt ? { next_attempt_at: a.nextAttemptAt } : {}),
      response_status: a.responseStatus,
      latency_ms: a.latencyMs,
      response_excerpt: a.excerpt,
      error: a.error?.slice(0, 500) ?? null,
    })
    .where('id', '=', id)
    .execute();
}

/** Marks a delivery failed without an attempt (its endpoint was disabled meanwhile). */
export async function abandonDelivery(db: Executor, id: string, why: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', error: why })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * Disables the endpoint of a delivery whose last retry failed, unless another delivery to it
 * succeeded since that delivery began (the endpoint works; this one message did not), and records
 * the `webhook.endpoint_disabled` event for its owner in the same transaction. Returns whether it
 * disabled the endpoint now.
 */
export async function disableAfterExhaustion(
  db: Db,
  d: { deliveryId: string; endpointId: string; agentId: string; url: string; since: Date },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const done = await trx
      .updateTable('webhook_endpoints')
      .set({
        status: 'disabled',
        disabled_reason: 'every attempt of a delivery failed over its whole retry schedule',
        disabled_at: new Date(),
        updated_at: new Date(),
      })
      .where('id', '=', d.endpointId)
      .where('status', '=', 'enabled')
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('webhook_deliveries')
              .select(sql`1`.as('one'))
              .where('endpoint_id', '=', d.endpointId)
              .where('status', '=', 'succeeded')
              .where('last_attempt_at', '>', d.since),
          ),
        ),
      )
      .executeTakeFirst();
    if (!done.numUpdatedRows) return false;
    await insertEvent(trx, 'webhook.endpoint_disabled', {
      agentId: d.agentId,
      payload: { endpointId: d.endpointId, url: d.url, deliveryId: d.deliveryId },
    });
    return true;
  });
}

/** An endpoint's deliveries, newest first, `limit` at most, before `before` (a created_at) when given. */
export function listDeliveries(
  db: Executor,
  endpointId: string,
  limit: number,
  before?: Date,
): Promise<WebhookDelivery[]> {
  let q = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  if (before) q = q.where('created_at', '<', before);
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** One delivery of an endpoint. */
export function findDelivery(db: Executor, endpointId: string, id: string): Promise<WebhookDelivery | undefined> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** A domain event as the fan-out reads it. */
export function findDomainEvent(db: Executor, id: string) {
  return db
    .selectFrom('domain_events')
    .select(['id', 'type', 'agent_id', 'post_id', 'payload', 'created_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Deletes up to `limit` finished deliveries created before `before` (the log is kept for a while,
 * not for ever); pending ones stay until their schedule ends. Returns how many were deleted.
 */
export async function pruneDeliveries(db: Executor, before: Date, limit: number): Promise<number> {
  const done = await sql`
    DELETE FROM webhook_deliveries WHERE id IN (
      SELECT id FROM webhook_deliveries
      WHERE created_at < ${before} AND status <> 'pending'
      ORDER BY created_at LIMIT ${limit})`.execute(db);
  return Number(done.numAffectedRows ?? 0n);
}

/** Pending deliveries due before `dueBefore`, most overdue first, at most `limit` (partial index). */
export async function overdueDeliveries(db: Executor, dueBefore: Date, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<', dueBefore)
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Marks deliveries queued again as due now: met again by a sweep, they come after the others. */
export async function markRequeued(db: Executor, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: new Date() })
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
}
