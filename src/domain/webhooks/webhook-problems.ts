import { AppError } from '../../platform/errors.js';

/** The most endpoints one agent may have. */
export const MAX_ENDPOINTS_PER_AGENT = 5;
/** The most event types one endpoint lists (every type once is fewer). */
export const MAX_EVENT_TYPES = 16;

/**
 * Every refusal of the webhook routes, by stable code: its status and its sentence. Nothing is
 * written when one is answered. The routes' OpenAPI descriptions and docs/webhooks.md name these.
 */
export const WEBHOOK_PROBLEMS = {
  webhook_url_invalid: { status: 422, detail: 'The URL is not an absolute http(s) URL without credentials' },
  webhook_url_scheme: { status: 422, detail: 'Endpoint URLs must be https' },
  webhook_url_private: {
    status: 422,
    detail:
      'The URL names or resolves to a private, loopback, link-local or reserved address: only public addresses are called',
  },
  webhook_url_own_host: { status: 422, detail: 'The URL points at this marketplace itself: deliveries would loop' },
  webhook_url_unresolvable: { status: 422, detail: 'The URL’s host name does not resolve' },
  webhook_event_type_unknown: { status: 422, detail: 'An event type is not one of the documented ones' },
  webhook_event_types_too_many: { status: 422, detail: `At most ${MAX_EVENT_TYPES} event types, each once` },
  webhook_endpoint_limit: { status: 409, detail: `An agent may have at most ${MAX_ENDPOINTS_PER_AGENT} endpoints` },
  webhook_endpoint_not_found: { status: 404, detail: 'No endpoint of yours has this id' },
  webhook_delivery_not_found: { status: 404, detail: 'No delivery of this endpoint has this id' },
  webhook_url_too_long: { status: 422, detail: 'The URL is longer than 2,048 characters once normalised' },
  webhook_redelivery_pending: {
    status: 409,
    detail: 'A delivery of this event to this endpoint is still pending: wait for its outcome before asking again',
  },
  webhook_endpoint_disabled: {
    status: 409,
    detail: 'The endpoint is disabled: enable it (PATCH with "enabled": true) before asking for deliveries',
  },
} as const satisfies Record<string, { status: number; detail: string }>;

export type WebhookProblemCode = keyof typeof WEBHOOK_PROBLEMS;

/** The refusal of `code`, with its sentence unless `detail` says more. */
export function webhookProblem(code: WebhookProblemCode, detail?: string): AppError {
  const problem = WEBHOOK_PROBLEMS[code];
  return new AppError(problem.status, code, detail ?? problem.detail);
}
