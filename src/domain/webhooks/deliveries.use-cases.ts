import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import type { Db } from '../../data/db.js';
import {
  abandonDelivery,
  deliveryToSend,
  disableAfterExhaustion,
  findDomainEvent,
  insertDeliveries,
  markRequeued,
  overdueDeliveries,
  pruneDeliveries,
  recordAttempt,
  subscribedEndpoints,
  type NewDelivery,
} from '../../data/webhooks.repository.js';
import { AppError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logger.js';
import { withinQueueBound, type Queues } from '../../platform/queues.js';
import { checkEndpointUrl, type WebhookNetworkPolicy } from './endpoint-url.js';
import { retryDelayMs, type RetrySchedule } from './retry-schedule.js';
import { messagesFor, PING_TYPE } from './webhook-events.js';
import { postDelivery, type AttemptOutcome } from './webhook-sender.js';

/** The job that sends one delivery, the one that turns a domain event into deliveries, the one that prunes the log. */
export const DELIVERY_JOB = 'webhook-delivery';
export const FANOUT_JOB = 'webhook-fanout';
export const PRUNE_JOB = 'webhook-prune';
export const SWEEP_JOB = 'webhook-sweep';
/**
 * A pending delivery this far past its due time has no job that will run it: its job gave up
 * (runs that failed before attempting, past the job's own attempts) or was lost with Redis.
 */
export const STRANDED_AFTER_MS = 10 * 60_000;
/** The most stranded deliveries one sweep queues again; the rest wait for the next sweep. */
const SWEEP_BATCH = 500;
/**
 * A fan-out job's tries: it fails only while the database or Redis is away, and waits at most a
 * minute between tries (webhookBackoff), so this outlasts an outage of about three days.
 */
export const FANOUT_ATTEMPTS = 4_500;
/** How long the delivery log keeps a finished delivery. */
export const DELIVERY_LOG_DAYS = 30;
const PRUNE_BATCH = 5_000;
/** The backoff type whose delays the delivery job itself chooses (see DeliveryRetryError). */
export const WEBHOOK_BACKOFF = 'webhook-schedule';

/** What delivering needs: the database, where it may connect, the retry schedule, and a clock and dice. */
export interface DeliveryDeps {
  db: Db;
  policy: WebhookNetworkPolicy;
  schedule: RetrySchedule;
  log: Logger;
  now?: () => Date;
  random?: () => number;
}

/**
 * A failed attempt with attempts left: the queue's backoff strategy (WEBHOOK_BACKOFF) waits
 * `retryInMs`, the delay the schedule drew for it, which the delivery log shows as next_attempt_at.
 */
export class DeliveryRetryError extends Error {
  override readonly name = 'DeliveryRetryError';
  constructor(
    readonly retryInMs: number,
    reason: string,
  ) {
    super(`delivery attempt failed (${reason}); next attempt in ${retryInMs} ms`);
  }
}

/**
 * BullMQ's delay before the next try of a webhook job: the delay the failed attempt drew from the
 * schedule, or, when the job failed before it could attempt (the database was down), a short
 * doubling pause that does not count as an attempt of the delivery.
 */
export function webhookBackoff(attemptsMade: number, _type?: string, err?: Error): number {
  if (err instanceof DeliveryRetryError) return err.retryInMs;
  return Math.min(1000 * 2 ** Math.max(0, attemptsMade - 1), 60_000);
}

/**
 * BullMQ options of a delivery job: its id is the delivery's, so each delivery (one message to one
 * endpoint) is queued once. The job may run a few more times than the schedule's attempts, as runs
 * that failed before attempting (the database was down) do not count; the delivery row counts.
 */
export function deliveryJobOptions(deliveryId: string, schedule: RetrySchedule) {
  return {
    jobId: `${DELIVERY_JOB}-${deliveryId}`,
    attempts: schedule.maxAttempts + 5,
    backoff: { type: WEBHOOK_BACKOFF },
    removeOnComplete: { age: 3600, count: 5000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  };
}

/** Queues deliveries, one bulk command, within the queue bound (DependencyUnavailableError past it). */
export async function enqueueDeliveries(queues: Queues, ids: string[], schedule: RetrySchedule): Promise<void> {
  if (!ids.length) return;
  await withinQueueBound(queues.webhooks, () =>
    queues.webhooks.addBulk(
      ids.map((id) => ({ name: DELIVERY_JOB, data: { deliveryId: id }, opts: deliveryJobOptions(id, schedule) })),
    ),
  );
}

/** BullMQ options of a fan-out job: retried about once a minute for days (FANOUT_ATTEMPTS). */
export const FANOUT_JOB_OPTIONS = { attempts: FANOUT_ATTEMPTS, backoff: { type: WEBHOOK_BACKOFF } };

/**
 * Queues stranded deliveries again, each under its own job id. A delivery whose job is still
 * waiting, delayed or running is left to it; a job that failed for good (BullMQ keeps it a week,
 * and a job id kept is a job id refused) or completed is removed first. Returns how many were
 * queued again.
 */
export async function requeueDeliveries(queues: Queues, ids: string[], schedule: RetrySchedule): Promise<string[]> {
  const requeued: string[] = [];
  for (const id of ids) {
    const opts = deliveryJobOptions(id, schedule);
    const job = await queues.webhooks.getJob(opts.jobId);
    if (job) {
      const state = await job.getState();
      if (state !== 'failed' && state !== 'completed') continue;
      await job.remove();
    }
    await withinQueueBound(queues.webhooks, () => queues.webhooks.add(DELIVERY_JOB, { deliveryId: id }, opts));
    requeued.push(id);
  }
  return requeued;
}

/**
 * The sweep (every few minutes, and at start): pending deliveries more than STRANDED_AFTER_MS past
 * their due time are handed to `requeue`, at most SWEEP_BATCH a run, most overdue first, and
 * those queued again marked due now (markRequeued), so that they come after the others if met again.
 */
export async function sweepStrandedDeliveries(deps: {
  db: Db;
  requeue: (ids: string[]) => Promise<string[]>;
  now?: () => Date;
}): Promise<{ overdue: number; requeued: number }> {
  const now = deps.now?.() ?? new Date();
  const ids = await overdueDeliveries(deps.db, new Date(now.getTime() - STRANDED_AFTER_MS), SWEEP_BATCH);
  if (!ids.length) return { overdue: 0, requeued: 0 };
  const requeued = await deps.requeue(ids);
  await markRequeued(deps.db, requeued);
  return { overdue: ids.length, requeued: requeued.length };
}

/**
 * The fan-out of one domain event: the messages it becomes (webhook-events.ts), one delivery of
 * each to every enabled endpoint of its agent that listens to its type. Recording is idempotent
 * (one delivery per endpoint and message), so a fan-out run twice queues nothing twice.
 */
export async function fanOutEvent(
  deps: { db: Db; schedule: RetrySchedule; enqueue: (ids: string[]) => Promise<void> },
  eventId: string,
): Promise<{ messages: number; deliveries: number }> {
  const e = await findDomainEvent(deps.db, eventId);
  if (!e) return { messages: 0, deliveries: 0 };
  let planned: ReturnType<typeof messagesFor>;
  try {
    planned = messagesFor({ ...e, id: String(e.id), payload: e.payload as Record<string, unknown> });
  } catch (err) {
    // An event whose payload does not give a message its documented shape is a bug, not an outage:
    // retrying it for days (FANOUT_ATTEMPTS) would change nothing.
    if (err instanceof z.ZodError)
      throw new AppError(422, 'webhook_event_malformed', `event ${eventId} gives no valid webhook message`, {
        issues: err.issues.slice(0, 5),
      });
    throw err;
  }
  const rows: NewDelivery[] = [];
  for (const { agentId, message } of planned) {
    for (const endpoint of await subscribedEndpoints(deps.db, agentId, message.type)) {
      rows.push({
        endpointId: endpoint.id,
        messageId: message.id,
        eventType: message.type,
        eventId: String(e.id),
        payload: message,
        maxAttempts: deps.schedule.maxAttempts,
      });
    }
  }
  const ids = await insertDeliveries(deps.db, rows);
  await deps.enqueue(ids);
  return { messages: planned.length, deliveries: ids.length };
}

/** The Standard Webhooks headers of one attempt: signed by the secret, and by the previous one while it lasts. */
export function signedHeaders(
  d: { message_id: string; secret: string; previous_secret: string | null; previous_secret_until: Date | null },
  at: Date,
  body: string,
): Record<string, string> {
  const signatures = [new Webhook(d.secret).sign(d.message_id, at, body)];
  if (d.previous_secret && d.previous_secret_until && d.previous_secret_until > at)
    signatures.push(new Webhook(d.previous_secret).sign(d.message_id, at, body));
  return {
    'webhook-id': d.message_id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

/**
 * One attempt of a delivery: checks the URL again, POSTs the signed message within the bounds of
 * the policy, and logs the outcome on the delivery. A failure with attempts left throws
 * DeliveryRetryError carrying the drawn delay; the last failure marks the delivery failed and
 * disables its endpoint (unless another delivery to it succeeded meanwhile), which writes the
 * `webhook.endpoint_disabled` event its owner hears of. A delivery whose endpoint was deleted is
 * gone with it: nothing is sent.
 */
export async function attemptDelivery(deps: DeliveryDeps, deliveryId: string): Promise<Record<string, unknown>> {
  const d = await deliveryToSend(deps.db, deliveryId);
  if (!d) return { outcome: 'gone' };
  if (d.status !== 'pending') return { outcome: d.status };
  if (d.endpoint_status !== 'enabled' && d.event_type !== PING_TYPE) {
    await abandonDelivery(deps.db, d.id, 'the endpoint was disabled');
    return { outcome: 'abandoned' };
  }
  const attempt = d.attempts + 1;
  const at = deps.now?.() ?? new Date();
  const body = JSON.stringify(d.payload);
  let outcome: AttemptOutcome;
  try {
    const url = await checkEndpointUrl(d.url, deps.policy);
    outcome = await postDelivery(url, body, signedHeaders(d, at, body), deps.policy);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    outcome = { ok: false, status: null, latencyMs: 0, excerpt: null, error: `refused: ${err.code}` };
  }
  const logged = {
    attempt,
    at,
    responseStatus: outcome.status,
    latencyMs: outcome.latencyMs,
    excerpt: outcome.excerpt,
    error: outcome.error,
  };
  if (outcome.ok) {
    await recordAttempt(deps.db, d.id, { ...logged, status: 'succeeded', nextAttemptAt: null });
    return { outcome: 'succeeded', attempt, status: outcome.status, ms: outcome.latencyMs };
  }
  const delay = retryDelayMs(attempt, { ...deps.schedule, maxAttempts: d.max_attempts }, deps.random);
  if (delay === undefined) {
    await recordAttempt(deps.db, d.id, { ...logged, status: 'failed', nextAttemptAt: null });
    const disabled =
      d.event_type !== PING_TYPE &&
      (await disableAfterExhaustion(deps.db, {
        deliveryId: d.id,
        endpointId: d.endpoint_id,
        agentId: d.agent_id,
        url: d.url,
        since: d.created_at,
      }));
    if (disabled) deps.log.warn({ endpointId: d.endpoint_id, deliveryId: d.id }, 'webhook endpoint disabled');
    return { outcome: 'failed', attempt, status: outcome.status, endpointDisabled: disabled };
  }
  await recordAttempt(deps.db, d.id, {
    ...logged,
    status: 'pending',
    nextAttemptAt: new Date(at.getTime() + delay),
  });
  throw new DeliveryRetryError(delay, outcome.error ?? 'failed');
}

/**
 * Deletes finished deliveries older than DELIVERY_LOG_DAYS, a batch at a time so that no statement
 * holds many rows locked; what is left past `maxBatches` waits for the next run.
 */
export async function pruneDeliveryLog(db: Db, now = new Date(), maxBatches = 20): Promise<{ deleted: number }> {
  const before = new Date(now.getTime() - DELIVERY_LOG_DAYS * 86_400_000);
  let deleted = 0;
  for (let i = 0; i < maxBatches; i++) {
    const n = await pruneDeliveries(db, before, PRUNE_BATCH);
    deleted += n;
    if (n < PRUNE_BATCH) break;
  }
  return { deleted };
}
