import type { Queues } from '../../platform/queues.js';
import { enqueueDeliveries, requeueDeliveries } from './deliveries.use-cases.js';
import type { WebhookNetworkPolicy } from './endpoint-url.js';
import type { RetrySchedule } from './retry-schedule.js';

/** The webhook settings of a deployment, as config.ts reads them. */
export interface WebhookConfig {
  allowLoopback: boolean;
  timeoutMs: number;
  retryBaseMs: number;
  maxAttempts: number;
}

const LOCAL_LISTENERS = new Set(['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost']);

/**
 * Where deliveries may go: the configured bounds, with this service's own public host (any port)
 * and its listener (host and port, under each local name when it listens locally or everywhere)
 * refused, so no endpoint makes the service call itself in a loop.
 */
export function webhookNetworkPolicy(
  c: WebhookConfig,
  own: { publicBaseUrl: string; listenHost: string; port: number },
): WebhookNetworkPolicy {
  const listeners = LOCAL_LISTENERS.has(own.listenHost)
    ? ['127.0.0.1', 'localhost', '[::1]', own.listenHost.includes(':') ? `[${own.listenHost}]` : own.listenHost]
    : [own.listenHost];
  const origin = new URL(own.publicBaseUrl);
  // A public name is ours on every port; a loopback one (development) only on the port we serve,
  // so that a receiver of the developer's own on another port stays allowed.
  const loopbackName = LOCAL_LISTENERS.has(origin.hostname) || origin.hostname === '[::1]';
  const originPort = origin.port || (origin.protocol === 'https:' ? '443' : '80');
  return {
    allowLoopback: c.allowLoopback,
    timeoutMs: c.timeoutMs,
    ownHostnames: loopbackName ? [] : [origin.hostname],
    ownHostPorts: [
      ...new Set([
        ...listeners.map((h) => `${h}:${own.port}`),
        ...(loopbackName ? [`${origin.hostname}:${originPort}`] : []),
      ]),
    ],
  };
}

/** The retry schedule the configuration sets (retry-schedule.ts). */
export function webhookRetrySchedule(c: WebhookConfig): RetrySchedule {
  return { baseMs: c.retryBaseMs, maxAttempts: c.maxAttempts };
}

/** What the webhook jobs and routes share: the network policy, the schedule, and how deliveries are queued. */
export function webhookRuntime(
  c: WebhookConfig,
  own: { publicBaseUrl: string; listenHost: string; port: number },
  queues: Queues,
) {
  const schedule = webhookRetrySchedule(c);
  return {
    policy: webhookNetworkPolicy(c, own),
    schedule,
    enqueue: (ids: string[]) => enqueueDeliveries(queues, ids, schedule),
    requeue: (ids: string[]) => requeueDeliveries(queues, ids, schedule),
  };
}
