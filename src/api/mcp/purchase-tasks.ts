import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { findPayment, IN_FLIGHT } from '../../data/payments.repository.js';
import { findPurchaseOfPayment, findVersion } from '../../data/posts.repository.js';
import type { Payment } from '../../data/schema.js';
import type { Paywall } from '../../domain/payments/paywall/paywall.js';
import { settlementOf } from '../../domain/payments/ledger/payment-record.js';
import type { ReceiptIssuer } from '../../domain/payments/protocol/extensions/offer-receipt.js';
import { readPost, type PostsDeps } from '../../domain/posts/post-reads.use-cases.js';
import { auditBlocksSale } from '../../documents/posts/skill-audit.document.js';
import { AppError, ConflictError, GoneError } from '../../platform/errors.js';
import { delivered, paymentRequired } from './buy-skill.js';
import { toolError } from './tool-results.js';
import type { FullSkillView } from './skill-integrity.js';

/** The tasks extension (SEP-2663): its key in capabilities, and the task a tool call may answer with. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/**
 * How often a client is asked to poll, and how long a task stays answerable from its creation (the
 * payment's): a settlement is resolved from the chain by the retry job within seconds to a minute,
 * and the payment row outlives the day (the reconciler never deletes a settled or settling
 * payment), so a day is a promise we keep. After it the task id names no task: a task id is a
 * bearer capability, and one that leaks later delivers nothing.
 */
export const TASK_POLL_INTERVAL_MS = 1_000;
export const TASK_TTL_MS = 24 * 60 * 60 * 1_000;

/** The x402 task state of a Task object (extension shape; what tasks/get answers). */
type TaskStatus = 'working' | 'completed';

export interface PurchaseTaskDeps {
  posts: PostsDeps;
  paywall: Paywall;
  receipts: ReceiptIssuer | undefined;
  /** The secret task ids are authenticated with. */
  taskKey: Buffer;
}

/**
 * The key of task ids, from a secret the service already holds (ADMIN_TOKEN, through a hash of its
 * own, so no task id reveals anything of it): a task id is a bearer capability (whoever holds it
 * receives the skill once paid), so it must not be derivable from anything public such as the
 * payment id or the settlement transaction.
 */
export function taskKeyFrom(secret: string): Buffer {
  return createHash('sha256').update('skill-market mcp purchase task\0').update(secret).digest();
}

const mac = (key: Buffer, paymentId: string) =>
  createHmac('sha256', key).update(`purchase-task:${paymentId}`).digest('base64url').slice(0, 32);

/** The task id of a purchase: its payment id and a MAC over it (nothing is stored for the task). */
export function purchaseTaskId(key: Buffer, paymentId: string): string {
  return `${paymentId}.${mac(key, paymentId)}`;
}

/** The payment a task id names, if the id is one we issued. */
function paymentIdOf(key: Buffer, taskId: string): string | undefined {
  const [paymentId, given, ...rest] = taskId.split('.');
  if (!paymentId || !given || rest.length || !/^[0-9a-f-]{36}$/i.test(paymentId)) return undefined;
  const expected = Buffer.from(mac(key, paymentId));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected) ? paymentId : undefined;
}

const iso = (t: Date | string) => new Date(t).toISOString();

/** The Task fields of a purchase's payment. */
function taskOf(key: Buffer, payment: Payment, status: TaskStatus) {
  return {
    taskId: purchaseTaskId(key, payment.id),
    status,
    statusMessage:
      status === 'working'
        ? `The payment ${payment.id} was sent for settlement; its outcome is not known yet`
        : `The payment ${payment.id} is ${payment.status}`,
    createdAt: iso(payment.created_at),
    lastUpdatedAt: iso(payment.updated_at),
    ttlMs: TASK_TTL_MS,
    pollIntervalMs: TASK_POLL_INTERVAL_MS,
  };
}

/** The CreateTaskResult of a buy_skill call whose settlement is pending. */
export function createPurchaseTask(key: Buffer, payment: Payment) {
  return { resultType: 'task' as const, ...taskOf(key, payment, 'working') };
}

const unknownTask = (taskId: string) =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown task ${taskId}: no purchase task has this id`, {
    taskId,
  });

const expiredTask = (taskId: string, expiredAt: Date) =>
  new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Unknown task ${taskId}: it expired at ${expiredAt.toISOString()} (its ttlMs after its creation)`,
    { taskId },
  );

/**
 * The payment of a task id, or the JSON-RPC error of an unknown task: an id we did not issue, or
 * one past its creation (the payment's creation, which the id's MAC binds it to) plus TASK_TTL_MS.
 */
async function taskPayment(deps: PurchaseTaskDeps, taskId: string): Promise<Payment> {
  const paymentId = paymentIdOf(deps.taskKey, taskId);
  const payment = paymentId ? await findPayment(deps.posts.db, paymentId) : undefined;
  if (payment?.purpose !== 'purchase' || !payment.post_id) throw unknownTask(taskId);
  const expiresAt = new Date(new Date(payment.created_at).getTime() + TASK_TTL_MS);
  if (Date.now() >= expiresAt.getTime()) throw expiredTask(taskId, expiresAt);
  return payment;
}

/**
 * `tasks/get` of a purchase task: `working` while the payment is in flight; `completed` once it is
 * settled (the result is what buy_skill would have answered: the skill, with the settlement in
 * `_meta["x402/payment-response"]`) or refused (the result is the x402 tool error with its reason).
 * A failed settlement is a tool result with `isError`, not a JSON-RPC error, so the task is
 * `completed`, never `failed` (the extension keeps `failed` for JSON-RPC errors).
 */
export async function getPurchaseTask(deps: PurchaseTaskDeps, taskId: string) {
  const payment = await taskPayment(deps, taskId);
  if (IN_FLIGHT.includes(payment.status)) return taskOf(deps.taskKey, payment, 'working');
  return { ...taskOf(deps.taskKey, payment, 'completed'), result: await purchaseResult(deps, payment) };
}

/** tasks/update and tasks/cancel of a purchase task: acknowledged (a broadcast payment cannot be called back). */
export async function acknowledgePurchaseTask(deps: PurchaseTaskDeps, taskId: string) {
  await taskPayment(deps, taskId);
  return {};
}

/**
 * What buy_skill answers for a payment that reached its outcome: the version the payment bought
 * (the one its settlement recorded), not the post's current one, so a task delivers what was paid
 * for and nothing published after. A skill or version that cannot be served any more (taken down,
 * or its audit failed since) is the tool error the HTTP API answers, with its code.
 */
async function purchaseResult(deps: PurchaseTaskDeps, payment: Payment): Promise<CallToolResult> {
  try {
    return await settledResult(deps, payment);
  } catch (err) {
    if (err instanceof AppError) return toolError(err.code, err.message, err.details);
    throw err;
  }
}

async function settledResult(deps: PurchaseTaskDeps, payment: Payment): Promise<CallToolResult> {
  const read = await readPost(deps.posts, payment.post_id as string, 'full', undefined, { paying: true });
  if (read.kind === 'document') return delivered(read.body as unknown as FullSkillView);
  if (payment.status !== 'settled') {
    const reason = payment.failure_reason ?? `payment_${payment.status}`;
    return paymentRequired(
      deps.paywall.refusal(read.resource, reason, `The payment ${payment.id} ${payment.status}: ${reason}`),
    );
  }
  const prepared = await read.resource.prepare(payment);
  const version = await boughtVersion(deps, payment, prepared.version);
  const rendered = (await read.resource.render(payment, { ...prepared, version })) as FullSkillView;
  // The full view numbers itself by the post's current version; this is the version delivered.
  const body: FullSkillView = { ...rendered, version: version.version };
  const settlement = await settlementOf(deps.receipts, payment);
  return delivered(body, { paymentId: payment.id, meta: { 'x402/payment-response': settlement } });
}

type PostVersion = Awaited<ReturnType<typeof findVersion>>;

/**
 * The version a settled purchase bought, as its settlement recorded it (the post's current one,
 * `current`, when no purchase is recorded); refused when it was taken down or its audit failed.
 */
async function boughtVersion(deps: PurchaseTaskDeps, payment: Payment, current: PostVersion): Promise<PostVersion> {
  const postId = payment.post_id as string;
  const bought = await findPurchaseOfPayment(deps.posts.db, payment.id);
  const version =
    !bought || bought.post_version === current.version
      ? current
      : await findVersion(deps.posts.db, postId, bought.post_version);
  if (version.removal !== null)
    throw new GoneError(`Version ${version.version} of post ${postId} was taken down`, 'version_removed', {
      reason: (version.removal as { reason?: string }).reason ?? null,
    });
  if (auditBlocksSale({ verdict: version.audit_verdict, override: version.audit_override }))
    throw new ConflictError(
      `Version ${version.version} of post ${postId} failed its audit (/api/posts/${postId}/versions/${version.version}/audit.json): it cannot be served`,
      'skill_audit_failed',
    );
  return version;
}
