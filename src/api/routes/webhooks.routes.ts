import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { authenticate } from '../middleware/auth.js';
import { MAX_URL_LENGTH } from '../../domain/webhooks/endpoint-url.js';
import { WEBHOOK_EVENT_TYPES } from '../../domain/webhooks/webhook-events.js';
import type { WebhookProblemCode } from '../../domain/webhooks/webhook-problems.js';
import { webhookRuntime } from '../../domain/webhooks/webhook-settings.js';
import {
  changeEndpoint,
  createEndpoint,
  endpointDeliveries,
  listAgentEndpoints,
  pingEndpoint,
  redeliver,
  removeEndpoint,
  rotateEndpointSecret,
  type WebhookDeps,
} from '../../domain/webhooks/webhooks.use-cases.js';

/** Codes for a response description, checked against the webhook codes table. */
const codes = (...list: WebhookProblemCode[]) => `(${list.join(', ')})`;

// The list is bounded by the body limit only, so an oversize list gets its own stable code from
// the use case rather than a generic validation error.
const EventTypes = z
  .array(z.string().max(200))
  .min(1)
  .max(1000)
  .describe(`event types to receive: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
const Url = z.string().max(MAX_URL_LENGTH).describe('https URL on a public address (docs/webhooks.md)');
const Description = z.string().max(200).describe('a note for yourself');

const EndpointParams = z.object({ id: z.guid().describe('the endpoint') });
const DeliveryParams = z.object({ id: z.guid(), deliveryId: z.guid() });

const EndpointView = z.object({
  id: z.string(),
  url: z.string(),
  eventTypes: z.array(z.string()),
  description: z.string(),
  status: z.enum(['enabled', 'disabled']),
  disabledReason: z.string().nullable(),
  disabledAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const WithSecret = EndpointView.extend({
  secret: z.string().describe('whsec_…: verify deliveries with it (Standard Webhooks); shown only here'),
});
const DeliveryView = z.object({
  id: z.string(),
  messageId: z.string().describe('the webhook-id header: the same on every retry and redelivery'),
  eventType: z.string(),
  redelivery: z.number().int().describe('0 for the first delivery, n for the n-th redelivery'),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  nextAttemptAt: z.string().nullable(),
  lastAttemptAt: z.string().nullable(),
  responseStatus: z.number().int().nullable(),
  latencyMs: z.number().int().nullable(),
  responseExcerpt: z.string().nullable().describe("the receiver's answer, its first 1 KB at most"),
  error: z.string().nullable(),
  createdAt: z.string(),
  payload: z.record(z.string(), z.unknown()).describe('the JSON body sent'),
});

const NOT_FOUND = { description: `Not an endpoint of yours ${codes('webhook_endpoint_not_found')}` };
const BAD_URL = {
  description: `Refused URL or event types ${codes(
    'webhook_url_invalid',
    'webhook_url_scheme',
    'webhook_url_private',
    'webhook_url_own_host',
    'webhook_url_unresolvable',
    'webhook_event_type_unknown',
    'webhook_event_types_too_many',
  )}`,
};

/**
 * Webhook endpoints of the signed-in agent, and their delivery logs (docs/webhooks.md; abuse
 * cases in docs/security.md, "Webhooks"). Every route takes the agent token and sees only the
 * agent's own endpoints. Deliveries themselves are sent by the workers, never by these routes.
 */
export const webhookRoutes = (deps: ApiDeps) => {
  const runtime = webhookRuntime(
    deps.config.webhooks,
    { publicBaseUrl: deps.site.baseUrl, listenHost: deps.config.host, port: deps.config.port },
    deps.queues,
  );
  const w: WebhookDeps = { db: deps.db, ...runtime };
  const agent = (req: Parameters<typeof authenticate>[0]) => authenticate(req, deps.jwt, true).sub;
  return [
    defineRoute({
      method: 'post',
      path: '/api/webhooks',
      operationId: 'createWebhookEndpoint',
      rateLimit: 'posting',
      summary: 'Add a webhook endpoint: an https URL and the event types it receives',
      description:
        'The URL passes the outbound filter registration files pass: https, public addresses only, not this marketplace. ' +
        'At most 5 endpoints per agent. The answer carries the signing secret (whsec_…), shown only here and on rotation.',
      tags: ['webhooks'],
      security: ['bearerJwt'],
      body: z.object({ url: Url, eventTypes: EventTypes, description: Description.optional() }).strict(),
      responses: {
        201: { description: 'The endpoint, with its secret', schema: WithSecret },
        409: { description: `Too many endpoints ${codes('webhook_endpoint_limit')}` },
        422: BAD_URL,
      },
      handler: async ({ body, req, res }) => {
        const answer = await createEndpoint(w, agent(req), body);
        res.status(201).set('Cache-Control', 'no-store').json(answer);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/webhooks',
      operationId: 'listWebhookEndpoints',
      summary: "The signed-in agent's webhook endpoints",
      tags: ['webhooks'],
      security: ['bearerJwt'],
      responses: {
        200: { description: 'Endpoints, oldest first', schema: z.object({ endpoints: z.array(EndpointView) }) },
      },
      handler: async ({ req, res }) => {
        res.set('Cache-Control', 'no-store').json(await listAgentEndpoints(w, agent(req)));
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/api/webhooks/:id',
      operationId: 'updateWebhookEndpoint',
      rateLimit: 'posting',
      summary: 'Change an endpoint: URL, event types, description, or enabled',
      description:
        '"enabled": true turns a disabled endpoint on again; past failed deliveries can then be redelivered.',
      tags: ['webhooks'],
      security: ['bearerJwt'],
      params: EndpointParams,
      body: z
        .object({
          url: Url.optional(),
          eventTypes: EventTypes.optional(),
          description: Description.optional(),
          enabled: z.boolean().optional(),
        })
        .strict(),
      responses: { 200: { description: 'The endpoint', schema: EndpointView }, 404: NOT_FOUND, 422: BAD_URL },
      handler: async ({ params, body, req, res }) => {
        res.set('Cache-Control', 'no-store').json(await changeEndpoint(w, agent(req), params.id, body));
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/api/webhooks/:id',
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete an endpoint and its delivery log; it receives nothing more',
      tags: ['webhooks'],
      security: ['bearerJwt'],
      params: EndpointParams,
      responses: { 204: { description: 'Deleted' }, 404: NOT_FOUND },
      handler: async ({ params, req, res }) => {
        await removeEndpoint(w, agent(req), params.id);
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/webhooks/:id/rotate-secret',
      operationId: 'rotateWebhookSecret',
      rateLimit: 'posting',
      summary: 'A new signing secret; the old one also signs for 24 hours',
      tags: ['webhooks'],
      security: ['bearerJwt'],
      params: EndpointParams,
      responses: {
        200: {
          description: 'The endpoint with its new secret',
          schema: WithSecret.extend({ previousSecretValidUntil: z.string() }),
        },
        404: NOT_FOUND,
      },
      handler: async ({ params, req, res }) => {
        res.set('Cache-Control', 'no-store').json(await rotateEndpointSecret(w, agent(req), params.id));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/webhooks/:id/ping',
      operationId: 'pingWebhookEndpoint',
      rateLimit: 'posting',
      summary: 'Send a signed test event (type ping) to the endpoint, once',
      description:
        'Queued, not sent by this request: its outcome shows in the delivery log within the attempt timeout.',
      tags: ['webhooks'],
      security: ['bearerJwt'],
      params: EndpointParams,
      responses: {
        202: { description: 'The ping delivery, queued', schema: DeliveryView },
        404: NOT_FOUND,
        503: { description: 'The job queue is unavailable', headers: { 'Retry-After': 'seconds' } },
      },
      handler: async ({ params, req, res }) => {
        res
          .status(202)
          .set('Cache-Control', 'no-store')
          .json(await pingEndpoint(w, agent(req), params.id));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/webhooks/:id/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: "An endpoint's delivery log, newest first",
      tags: ['webhooks'],
      security: ['bearerJwt'],
      params: EndpointParams,
      query: z.object({
        limit: z.coerce.number().int().min(1).max(100).default(50),
        before: z.iso.datetime({ offset: true }).optional().describe('deliveries created before this time (paging)'),
      }),
      responses: {
        200: { description: 'Deliveries', schema: z.object({ deliveries: z.array(DeliveryView) }) },
        404: NOT_FOUND,
      },
      handler: async ({ params, query, req, res }) => {
        const page = { limit: query.limit, before: query.before ? new Date(query.before) : undefined };
        res.set('Cache-Control', 'no-store').json(await endpointDeliveries(w, agent(req), params.id, page));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/webhooks/:id/deliveries/:deliveryId/redeliver',
      operationId: 'redeliverWebhook',
      rateLimit: 'posting',
      summary: 'Send a past event again to the endpoint (a new delivery, same webhook-id)',
      tags: ['webhooks'],
      security: ['bearerJwt'],
      params: DeliveryParams,
      responses: {
        202: { description: 'The new delivery, queued', schema: DeliveryView },
        404: {
          description: `No such endpoint or delivery ${codes('webhook_endpoint_not_found', 'webhook_delivery_not_found')}`,
        },
        409: { description: `The endpoint is disabled ${codes('webhook_endpoint_disabled')}` },
        503: { description: 'The job queue is unavailable', headers: { 'Retry-After': 'seconds' } },
      },
      handler: async ({ params, req, res }) => {
        res
          .status(202)
          .set('Cache-Control', 'no-store')
          .json(await redeliver(w, agent(req), params.id, params.deliveryId));
      },
    }),
  ];
};
