import { randomBytes, randomUUID } from 'node:crypto';
import { type Db, isUniqueViolation } from '../../data/db.js';
import {
  abandonDelivery,
  deleteEndpoint,
  findDelivery,
  findEndpoint,
  insertDeliveries,
  insertEndpoint,
  hasPendingDelivery,
  insertRedelivery,
  listDeliveries,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '../../data/webhooks.repository.js';
import { checkEndpointUrl, type WebhookNetworkPolicy } from './endpoint-url.js';
import type { RetrySchedule } from './retry-schedule.js';
import { PING_TYPE, WEBHOOK_EVENT_TYPES, type WebhookMessage } from './webhook-events.js';
import { MAX_ENDPOINTS_PER_AGENT, MAX_EVENT_TYPES, webhookProblem } from './webhook-problems.js';

/** How long the secret a rotation replaced still signs deliveries (a second signature). */
export const PREVIOUS_SECRET_HOURS = 24;

/** What the endpoint routes need. */
export interface WebhookDeps {
  db: Db;
  policy: WebhookNetworkPolicy;
  schedule: RetrySchedule;
  /** Queues deliveries (bounded; DependencyUnavailableError when Redis is away). */
  enqueue(ids: string[]): Promise<void>;
}

/** An endpoint as its owner sees it; the secret only in the answers that set it. */
export function endpointView(e: WebhookEndpoint) {
  return {
    id: e.id,
    url: e.url,
    eventTypes: e.event_types,
    description: e.description,
    status: e.status,
    disabledReason: e.disabled_reason,
    disabledAt: e.disabled_at?.toISOString() ?? null,
    createdAt: e.created_at.toISOString(),
    updatedAt: e.updated_at.toISOString(),
  };
}

/** A delivery as the log shows it: outcome, attempts, response code, latency and a bounded excerpt. */
export function deliveryView(d: WebhookDelivery) {
  return {
    id: d.id,
    messageId: d.message_id,
    eventType: d.event_type,
    redelivery: d.redelivery,
    status: d.status,
    attempts: d.attempts,
    maxAttempts: d.max_attempts,
    nextAttemptAt: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
    lastAttemptAt: d.last_attempt_at?.toISOString() ?? null,
    responseStatus: d.response_status,
    latencyMs: d.latency_ms,
    responseExcerpt: d.response_excerpt,
    error: d.error,
    createdAt: d.created_at.toISOString(),
    payload: d.payload,
  };
}

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Event types as given, checked: known, each once, at most MAX_EVENT_TYPES. */
export function checkEventTypes(types: readonly string[]): string[] {
  if (types.length > MAX_EVENT_TYPES || new Set(types).size !== types.length)
    throw webhookProblem('webhook_event_types_too_many');
  const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length)
    throw webhookProblem(
      'webhook_event_type_unknown',
      `Unknown event type${unknown.length > 1 ? 's' : ''} ${unknown
        .slice(0, 3)
        .map((t) => JSON.stringify(t.slice(0, 64)))
        .join(', ')}; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
    );
  return [...types];
}

/** Creates an endpoint for the agent; answers it with its secret, shown this once. */
export async function createEndpoint(
  deps: WebhookDeps,
  agentId: string,
  input: { url: string; eventTypes: string[]; description?: string },
) {
  const eventTypes = checkEventTypes(input.eventTypes);
  const url = await checkEndpointUrl(input.url, deps.policy);
  const secret = newSecret();
  const row = await insertEndpoint(
    deps.db,
    { agentId, url: url.href, eventTypes, description: input.description ?? '', secret },
    MAX_ENDPOINTS_PER_AGENT,
  );
  if (!row) throw webhookProblem('webhook_endpoint_limit');
  return { ...endpointView(row), secret };
}

export async function listAgentEndpoints(deps: WebhookDeps, agentId: string) {
  return { endpoints: (await listEndpoints(deps.db, agentId)).map(endpointView) };
}

/** The agent's disabled endpoints, as its dashboard's notice shows them. */
export async function disabledEndpoints(db: Db, agentId: string) {
  return (await listEndpoints(db, agentId)).filter((e) => e.status === 'disabled').map(endpointView);
}

async function ownEndpoint(deps: WebhookDeps, agentId: string, id: string): Promise<WebhookEndpoint> {
  const e = await findEndpoint(deps.db, agentId, id);
  if (!e) throw webhookProblem('webhook_endpoint_not_found');
  return e;
}

/** Changes an endpoint's URL, event types, description, or enables or disables it. */
export async function changeEndpoint(
  deps: WebhookDeps,
  agentId: string,
  id: string,
  patch: { url?: string; eventTypes?: string[]; description?: string; enabled?: boolean },
) {
  const eventTypes = patch.eventTypes === undefined ? undefined : checkEventTypes(patch.eventTypes);
  const url = patch.url === undefined ? undefined : (await checkEndpointUrl(patch.url, deps.policy)).href;
  const row = await updateEndpoint(deps.db, agentId, id, { ...patch, url, eventTypes });
  if (!row) throw webhookProblem('webhook_endpoint_not_found');
  return endpointView(row);
}

/** Deletes an endpoint: deliveries queued for it find nothing and send nothing. */
export async function removeEndpoint(deps: WebhookDeps, agentId: string, id: string): Promise<void> {
  if (!(await deleteEndpoint(deps.db, agentId, id))) throw webhookProblem('webhook_endpoint_not_found');
}

/** A new secret; the old one keeps signing (a second signature) for PREVIOUS_SECRET_HOURS. */
export async function rotateEndpointSecret(deps: WebhookDeps, agentId: string, id: string, now = new Date()) {
  const secret = newSecret();
  const until = new Date(now.getTime() + PREVIOUS_SECRET_HOURS * 3600_000);
  const row = await rotateSecret(deps.db, agentId, id, secret, until);
  if (!row) throw webhookProblem('webhook_endpoint_not_found');
  return { ...endpointView(row), secret, previousSecretValidUntil: until.toISOString() };
}

/** Queues a `ping` to the endpoint (one attempt, not retried); its outcome shows in the delivery log. */
export async function pingEndpoint(deps: WebhookDeps, agentId: string, id: string, now = new Date()) {
  const e = await ownEndpoint(deps, agentId, id);
  const message: WebhookMessage = {
    id: `msg_ping_${randomUUID()}`,
    type: PING_TYPE,
    timestamp: now.toISOString(),
    sequence: 0,
    agentId,
    data: { endpointId: e.id },
  };
  const [deliveryId] = await insertDeliveries(deps.db, [
    { endpointId: e.id, messageId: message.id, eventType: PING_TYPE, eventId: null, payload: message, maxAttempts: 1 },
  ]);
  if (!deliveryId) throw new Error('the ping delivery was not recorded');
  await enqueueOrAbandon(deps, deliveryId);
  const row = await findDelivery(deps.db, e.id, deliveryId);
  if (!row) throw webhookProblem('webhook_endpoint_not_found');
  return deliveryView(row);
}

/** The endpoint's delivery log, newest first. */
export async function endpointDeliveries(
  deps: WebhookDeps,
  agentId: string,
  id: string,
  page: { limit: number; before?: Date },
) {
  const e = await ownEndpoint(deps, agentId, id);
  return { deliveries: (await listDeliveries(deps.db, e.id, page.limit, page.before)).map(deliveryView) };
}

/**
 * Sends a past message again: a new delivery (the next redelivery number) with the same message
 * id and payload, retried on the schedule like the first. The endpoint must be enabled.
 */
export async function redeliver(deps: WebhookDeps, agentId: string, id: string, deliveryId: string) {
  const e = await ownEndpoint(deps, agentId, id);
  if (e.status !== 'enabled') throw webhookProblem('webhook_endpoint_disabled');
  const past = await findDelivery(deps.db, e.id, deliveryId);
  if (!past) throw webhookProblem('webhook_delivery_not_found');
  // One pending delivery of a message per endpoint: asking again while one is still being retried
  // would multiply the requests sent to a receiver (docs/webhooks.md, "Abuse").
  if (await hasPendingDelivery(deps.db, e.id, past.message_id)) throw webhookProblem('webhook_redelivery_pending');
  const again = await redeliveryOf(deps, past);
  await enqueueOrAbandon(deps, again.id);
  return deliveryView(again);
}

/**
 * The next redelivery of a past delivery. Two asked for at once both read the same last number: the
 * one that loses on the unique key takes the next number, so each request gets its own delivery.
 */
async function redeliveryOf(deps: WebhookDeps, past: WebhookDelivery, tries = 3): Promise<WebhookDelivery> {
  try {
    return await insertRedelivery(deps.db, past, past.event_type === PING_TYPE ? 1 : deps.schedule.maxAttempts);
  } catch (err) {
    if (tries > 1 && isUniqueViolation(err)) return redeliveryOf(deps, past, tries - 1);
    throw err;
  }
}

/** Queues a delivery asked for by request; one the queue refused is marked failed, so none stays pending unqueued. */
async function enqueueOrAbandon(deps: WebhookDeps, deliveryId: string): Promise<void> {
  try {
    await deps.enqueue([deliveryId]);
  } catch (err) {
    await abandonDelivery(deps.db, deliveryId, 'the job queue was unavailable; ask again');
    throw err;
  }
}
