/** The longest pause between polls of a background loop after failures. */
export const MAX_BACKOFF_MS = 5_000;

/**
 * The pause before a polling loop's next try after `failures` consecutive failures: the interval
 * doubled per failure, at most `MAX_BACKOFF_MS`. While the database or Redis is down, loops wait
 * longer instead of failing (and logging) several times a second.
 */
export function backoff(intervalMs: number, failures: number): number {
  return Math.min(intervalMs * 2 ** Math.min(failures, 16), MAX_BACKOFF_MS);
}
