import { setTimeout as sleepFor } from 'node:timers/promises';
import { backoff } from '../src/platform/backoff.js';
import type { Logger } from '../src/platform/logger.js';

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export type Sleeper = (ms: number, signal: AbortSignal) => Promise<void>;

/** The real clock: a timer that an abort cuts short. */
export const realSleeper: Sleeper = (ms, signal) => sleepFor(ms, undefined, { signal }).catch(() => undefined);

export interface PollingLoopOptions {
  /** What the loop does, as its log lines name it ("event dispatch", "feed indexing"). */
  name: string;
  /** The pause between passes while they succeed. */
  intervalMs: number;
  /**
   * One pass over the pending work. Resolving `true` says a full batch was taken and more may be
   * waiting, so the next pass starts at once instead of after the interval.
   */
  pass: () => Promise<boolean>;
  log: Logger;
  sleep?: Sleeper;
}

export interface PollingLoop {
  /** Resolves when the loop has ended (after `stop`). */
  readonly done: Promise<void>;
  /** Ends the pause under way at once, lets a pass under way finish, and runs no other. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` every `intervalMs` until stopped. A pass that throws is logged and retried after a
 * pause that doubles with each consecutive failure (`backoff`), so a loop whose database or Redis
 * is down waits instead of failing several times a second; the first success resumes the pace.
 */
export function startPollingLoop(opts: PollingLoopOptions): PollingLoop {
  const sleep = opts.sleep ?? realSleeper;
  const stopped = new AbortController();
  const run = async () => {
    let failures = 0;
    while (!stopped.signal.aborted) {
      let more = false;
      try {
        more = await opts.pass();
        if (failures) opts.log.info({ failures }, `${opts.name} recovered`);
        failures = 0;
      } catch (err) {
        failures++;
        opts.log.warn({ err, failures }, `${opts.name} failed; retrying`);
      }
      if (stopped.signal.aborted) break;
      await sleep(failures ? backoff(opts.intervalMs, failures) : more ? 0 : opts.intervalMs, stopped.signal);
    }
  };
  const done = run();
  return {
    done,
    async stop() {
      stopped.abort();
      await done;
    },
  };
}
