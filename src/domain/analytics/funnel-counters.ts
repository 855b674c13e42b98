import type { FunnelCount, FunnelKind, Source } from '../../data/analytics.repository.js';
import type { PaywallOutcome } from '../payments/paywall/paywall.js';

/**
 * The most distinct (skill, day, kind, source) counters held between two flushes. A flood of
 * requests naming many skills (a crawler) fills it; past it, new counters are dropped and counted
 * in `dropped`, never memory grown without bound. Counters already held keep counting.
 */
export const MAX_PENDING_COUNTERS = 50_000;

/** The UTC day of a time, YYYY-MM-DD. */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/**
 * The funnel steps a process sees (manifest views, 402 challenges shown, purchases delivered),
 * counted in memory: one map increment on the request's path, no I/O, no await. A flusher takes
 * them (`drain`) every few seconds and adds them to the database in one statement. What a crash
 * loses is what was counted since the last flush (docs/analytics.md#error-bound).
 */
export class FunnelCounters {
  private pending = new Map<string, FunnelCount>();
  /** Counts dropped because MAX_PENDING_COUNTERS were held. */
  dropped = 0;
  /** When the counters were last written to the database (ms since epoch); the lag /metrics shows. */
  lastFlushAt = Date.now();

  constructor(
    private readonly now: () => Date = () => new Date(),
    private readonly max = MAX_PENDING_COUNTERS,
  ) {}

  /** Counts one step of a skill's funnel. Synchronous and allocation-light: safe on the paid path. */
  count(postId: string, kind: FunnelKind, source: Source, n = 1): void {
    const day = utcDay(this.now());
    const key = `${postId}|${day}|${kind}|${source}`;
    const held = this.pending.get(key);
    if (held) {
      held.count += n;
      return;
    }
    if (this.pending.size >= this.max) {
      this.dropped += n;
      return;
    }
    this.pending.set(key, { postId, day, kind, source, count: n });
  }

  /** How many distinct counters wait for the next flush. */
  get size(): number {
    return this.pending.size;
  }

  /** Takes every pending counter; counting goes on into a fresh map. */
  drain(): FunnelCount[] {
    const taken = [...this.pending.values()];
    this.pending = new Map();
    return taken;
  }

  /** Records that what was drained (or nothing, when nothing was pending) is in the database. */
  flushed(): void {
    this.lastFlushAt = this.now().getTime();
  }

  /** Puts back counts a flush could not write (the database was down), within the same bound. */
  restore(counts: FunnelCount[]): void {
    for (const c of counts) this.count(c.postId, c.kind, c.source, c.count);
  }
}

/**
 * Counts what a paywall answer shows of a skill's funnel: a 402 that asks for a payment (the
 * challenge a buyer sees first; a refused payment is not counted again), or a first delivery of a
 * paid skill (a replay of the same payment is not). Sales themselves are read from the ledger.
 */
export function countOutcome(counters: FunnelCounters, postId: string, outcome: PaywallOutcome, source: Source): void {
  if (outcome.kind === 'challenge' && outcome.reason === 'payment_required')
    counters.count(postId, 'challenge', source);
  else if (outcome.kind === 'paid' && !outcome.replay) counters.count(postId, 'delivered', source);
}
