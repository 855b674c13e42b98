/**
 * When a failed delivery is tried again: exponential backoff from `baseMs`, doubling per failure
 * and capped at `baseMs × CAP_FACTOR`, each delay drawn within ±20 % (jitter) so that the
 * deliveries of an endpoint that came back do not all arrive at once. With the defaults (30 s,
 * 17 attempts) the retries span about three days: 30 s, 1 min, 2 min … 8.5 h, then 12 h five
 * times, 77 h in all (62 to 92 h with the jitter). docs/webhooks.md has the table.
 */
export interface RetrySchedule {
  /** The first retry's nominal delay (WEBHOOK_RETRY_BASE_MS). */
  baseMs: number;
  /** Attempts in all, the first included (WEBHOOK_MAX_ATTEMPTS). */
  maxAttempts: number;
}

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = { baseMs: 30_000, maxAttempts: 17 };
/** The longest nominal delay is this many times the base: 12 h from 30 s. */
export const CAP_FACTOR = 1440;
/** Each delay is drawn from [nominal × (1 − JITTER), nominal × (1 + JITTER)). */
export const JITTER = 0.2;

/** The nominal delay after the `failures`-th failed attempt (1-based), before jitter. */
export function nominalRetryDelayMs(failures: number, baseMs: number): number {
  const n = Math.max(1, Math.floor(failures));
  return Math.min(baseMs * 2 ** Math.min(n - 1, 40), baseMs * CAP_FACTOR);
}

/**
 * The delay before the next attempt after the `failures`-th failed one, with jitter from `random`
 * (a source in [0, 1), Math.random in the service, a fixed one in tests); undefined when no
 * attempt is left (the delivery has failed for good).
 */
export function retryDelayMs(
  failures: number,
  schedule: RetrySchedule,
  random: () => number = Math.random,
): number | undefined {
  if (failures >= schedule.maxAttempts) return undefined;
  const nominal = nominalRetryDelayMs(failures, schedule.baseMs);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(nominal * (1 - JITTER + 2 * JITTER * r));
}

/** The sum of the nominal delays: how long a delivery that always fails is retried. */
export function nominalRetrySpanMs(schedule: RetrySchedule): number {
  let total = 0;
  for (let n = 1; n < schedule.maxAttempts; n++) total += nominalRetryDelayMs(n, schedule.baseMs);
  return total;
}
