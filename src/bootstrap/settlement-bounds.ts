import { BUILTIN_SETTLE_BOUNDS } from '../domain/payments/facilitators/builtin-facilitator.js';
import { ConfigError, type Config } from '../platform/config.js';

/** How far the clock of the process that marks a payment `settling` may be from the reconciler's. */
export const CLOCK_SKEW_MS = 1_000;

/**
 * A request marks its payment `settling`, then waits for its facilitator's settle. The reconciler
 * must not take that payment while the request may still be waiting: it would send the same
 * authorization a second time, racing the first. A remote facilitator's call ends at
 * FACILITATOR_TIMEOUT_MS; the built-in one sends within its queue wait and then waits up to its
 * receipt timeout (BUILTIN_SETTLE_BOUNDS, exported where those timings are set). So
 * PAYMENTS_STUCK_AFTER_MS must exceed the longer of the two among the facilitators configured,
 * plus clock skew between processes. Checked here, where the facilitators are composed, against
 * the values they really use.
 */
export function assertStuckAfterLiveSettlement(c: Config): void {
  const bounds: Array<{ ms: number; why: string }> = [];
  if (c.chain.facilitatorUrls.length > 0) {
    bounds.push({
      ms: c.chain.facilitatorTimeoutMs,
      why: `FACILITATOR_TIMEOUT_MS is ${c.chain.facilitatorTimeoutMs} ms`,
    });
  }
  if (c.chain.facilitatorBuiltin) {
    const { beforeSendMs, receiptWaitMs } = BUILTIN_SETTLE_BOUNDS;
    bounds.push({
      ms: beforeSendMs + receiptWaitMs,
      why: `the built-in facilitator (FACILITATOR_BUILTIN) takes up to ${beforeSendMs} ms to send, then waits up to ${receiptWaitMs} ms for its receipt`,
    });
  }
  const longest = bounds.sort((a, b) => b.ms - a.ms)[0];
  if (!longest) return;
  const bound = longest.ms + CLOCK_SKEW_MS;
  if (c.paymentsStuckAfterMs <= bound) {
    throw new ConfigError([
      `PAYMENTS_STUCK_AFTER_MS (${c.paymentsStuckAfterMs}) must be greater than ${bound}: a request may still be settling a payment ` +
        `for ${longest.ms} ms (${longest.why}), plus ${CLOCK_SKEW_MS} ms of clock skew, and the reconciler would send it a second time`,
    ]);
  }
}
