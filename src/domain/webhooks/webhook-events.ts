import { z } from 'zod';

/**
 * The event types an endpoint may subscribe to, and the domain events (the outbox) they come from.
 * Every one is written in the transaction that records its fact, so a webhook is never sent for
 * something that did not commit, and never from a request's own path (docs/webhooks.md).
 */
export const WEBHOOK_EVENT_TYPES = [
  'sale.settled',
  'payment.failed',
  'entitlement.granted',
  'review.created',
  'review.revoked',
  'refund.requested',
  'refund.settled',
  'skill.taken_down',
  'skill.audited',
  'report.filed',
  'document.published',
  'endpoint.disabled',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The test ping's type: sent only on request, never subscribed to. */
export const PING_TYPE = 'ping';

const Atomic = z.string().regex(/^\d+$/).describe('atomic USDC (6 decimals), as a decimal string');
const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const Id = z.string().min(1);

/** The `data` of each event type: what a receiver may rely on. */
export const WEBHOOK_DATA = {
  'sale.settled': z.object({
    paymentId: Id,
    skillId: Id,
    buyer: Address.describe('the wallet that paid'),
    buyerAgentId: Id.nullable().describe('the buyer agent, when the paying wallet is one'),
    amount: Atomic,
  }),
  'payment.failed': z.object({
    paymentId: Id,
    skillId: Id,
    buyer: Address.describe('the wallet whose authorization failed'),
    buyerAgentId: Id.nullable().describe('the buyer agent, when the paying wallet is one'),
    amount: Atomic,
    reason: z.string().describe('the refusal code the buyer was given (e.g. insufficient_funds)'),
  }),
  'entitlement.granted': z.object({
    paymentId: Id,
    skillId: Id,
    sellerAgentId: Id,
    amount: Atomic,
  }),
  'review.created': z.object({
    reviewId: Id,
    skillId: Id,
    buyer: Address,
    rating: z.number(),
    revision: z.number().int(),
  }),
  'review.revoked': z.object({ reviewId: Id, skillId: Id, buyer: Address }),
  'refund.requested': z.object({ paymentId: Id, skillId: Id, reason: z.string() }),
  'refund.settled': z.object({
    paymentId: Id,
    refundId: Id,
    skillId: Id,
    amount: Atomic,
    buyer: Address,
    txHash: z.string().nullable(),
  }),
  'skill.taken_down': z.object({
    skillId: Id,
    reason: z.string(),
    version: z.number().int().nullable().describe('the version taken down, or null for the whole skill'),
  }),
  'skill.audited': z.object({
    skillId: Id,
    version: z.number().int(),
    verdict: z.enum(['pass', 'warn', 'fail']),
    rulesVersion: z.number().int().describe('the audit rules the verdict was reached under'),
  }),
  'report.filed': z.object({
    reportId: Id,
    skillId: Id.nullable().describe('the skill reported, or null when the report is about the agent itself'),
    reason: z.string().describe('the report reason code; who filed it and what it says are not sent'),
  }),
  'document.published': z.object({
    paths: z
      .array(z.string().startsWith('/'))
      .min(1)
      .describe(
        "the paths just written, under the site's public base URL: the agent's documents and page, its skills' documents, pages and archives",
      ),
  }),
  'endpoint.disabled': z.object({
    endpointId: Id,
    url: z.string(),
    deliveryId: Id.describe('the delivery whose last retry failed'),
  }),
  ping: z.object({ endpointId: Id }),
} as const satisfies Record<WebhookEventType | typeof PING_TYPE, z.ZodType>;

/**
 * The JSON body of every delivery (the Standard Webhooks shape plus `id`, `sequence` and `agentId`):
 * `timestamp` is when the event happened, not when it was sent; `sequence` grows with the order
 * events were recorded in, so a receiver can order what arrives out of order.
 */
export const WebhookMessage = z.object({
  id: Id.describe('the message id, also sent as webhook-id: the same on every retry and redelivery'),
  type: z.enum([...WEBHOOK_EVENT_TYPES, PING_TYPE]),
  timestamp: z.iso.datetime({ offset: true }),
  sequence: z.number().int().nonnegative(),
  agentId: Id.describe('the agent the endpoint belongs to'),
  data: z.record(z.string(), z.unknown()),
});
export type WebhookMessage = z.infer<typeof WebhookMessage>;

/** A message for one agent, from one domain event. */
export interface PlannedMessage {
  agentId: string;
  message: WebhookMessage;
}

/** A domain event as the fan-out reads it. */
export interface SourceEvent {
  id: string;
  type: string;
  agent_id: string | null;
  post_id: string | null;
  payload: Record<string, unknown>;
  created_at: Date;
}

/** The domain event types that become webhook messages (the dispatcher plans a fan-out for these only). */
export const WEBHOOK_SOURCE_EVENTS: ReadonlySet<string> = new Set([
  'purchase.settled',
  'payment.failed',
  'post.audited',
  'report.filed',
  'document.published',
  'review.posted',
  'review.revoked',
  'refund.requested',
  'purchase.refunded',
  'moderation.taken_down',
  'webhook.endpoint_disabled',
]);

const text = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

/**
 * The messages a domain event becomes, each for the agent it concerns: a settled purchase is a
 * sale for its seller and an entitlement for its buyer (when the buyer is an agent). Each `data`
 * is checked against its schema, so a message never leaves in a shape the docs do not promise.
 */
export function messagesFor(e: SourceEvent): PlannedMessage[] {
  const p = e.payload;
  const out: PlannedMessage[] = [];
  const add = <T extends WebhookEventType>(type: T, agentId: string | null | undefined, data: unknown) => {
    if (!agentId) return;
    out.push({
      agentId,
      message: {
        id: `evt_${e.id}_${type}`,
        type,
        timestamp: e.created_at.toISOString(),
        sequence: Number(e.id),
        agentId,
        data: WEBHOOK_DATA[type].parse(data) as Record<string, unknown>,
      },
    });
  };
  switch (e.type) {
    case 'purchase.settled': {
      const buyerAgentId = p.buyerAgentId ? text(p.buyerAgentId) : null;
      const common = { paymentId: text(p.paymentId), skillId: text(e.post_id), amount: text(p.amount) };
      add('sale.settled', e.agent_id, { ...common, buyer: text(p.buyer), buyerAgentId });
      if (buyerAgentId && e.agent_id)
        add('entitlement.granted', buyerAgentId, { ...common, sellerAgentId: e.agent_id });
      break;
    }
    case 'payment.failed':
      add('payment.failed', e.agent_id, {
        paymentId: text(p.paymentId),
        skillId: text(e.post_id),
        buyer: text(p.buyer),
        buyerAgentId: p.buyerAgentId ? text(p.buyerAgentId) : null,
        amount: text(p.amount),
        reason: text(p.reason),
      });
      break;
    case 'post.audited':
      add('skill.audited', e.agent_id, {
        skillId: text(e.post_id),
        version: Number(p.version),
        verdict: p.verdict,
        rulesVersion: Number(p.rulesVersion),
      });
      break;
    case 'report.filed':
      add('report.filed', e.agent_id, {
        reportId: text(p.reportId),
        skillId: e.post_id ? text(e.post_id) : null,
        reason: text(p.reason),
      });
      break;
    case 'document.published':
      add('document.published', e.agent_id, { paths: Array.isArray(p.paths) ? p.paths.map(text) : [] });
      break;
    case 'review.posted':
      add('review.created', e.agent_id, {
        reviewId: text(p.reviewId),
        skillId: text(e.post_id),
        buyer: text(p.buyer),
        rating: Number(p.rating),
        revision: Number(p.revision ?? 0),
      });
      break;
    case 'review.revoked':
      add('review.revoked', e.agent_id, { reviewId: text(p.reviewId), skillId: text(e.post_id), buyer: text(p.buyer) });
      break;
    case 'refund.requested':
      add('refund.requested', e.agent_id, {
        paymentId: text(p.paymentId),
        skillId: text(e.post_id),
        reason: text(p.reason),
      });
      break;
    case 'purchase.refunded':
      add('refund.settled', e.agent_id, {
        paymentId: text(p.paymentId),
        refundId: text(p.refundId),
        skillId: text(e.post_id),
        amount: text(p.amount),
        buyer: text(p.buyer),
        txHash: p.txHash ? text(p.txHash) : null,
      });
      break;
    case 'moderation.taken_down':
      add('skill.taken_down', e.agent_id, {
        skillId: text(e.post_id),
        reason: text(p.reason),
        version: typeof p.version === 'number' ? p.version : null,
      });
      break;
    case 'webhook.endpoint_disabled':
      add('endpoint.disabled', e.agent_id, {
        endpointId: text(p.endpointId),
        url: text(p.url),
        deliveryId: text(p.deliveryId),
      });
      break;
  }
  return out;
}
