import { BrokenCircuitError, CircuitState } from 'cockatiel';
import type { SettleResponse, VerifyResponse } from '@x402/core/types';
import { ServiceUnavailableError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logger.js';
import { withTimeout } from '../../../platform/timeout.js';
import { NotSentError, whenReady, type Facilitator } from './facilitator.js';
import {
  breakerMember,
  messageOf,
  STATE_NAMES,
  takesPayments,
  type BreakerState,
  type FacilitatorStatus,
  type Member,
} from './breaker.js';
import type { FacilitatorRequest } from '../protocol/x402-codec.js';

export type { BreakerState, FacilitatorStatus };

/** Every facilitator is down or its breaker is open: a paid request gets 503 and nothing is charged. */
export class AllFacilitatorsUnavailableError extends Error {
  constructor(
    readonly retryAfterSeconds: number,
    readonly errors: string[],
  ) {
    super(`no facilitator is available: ${errors.join('; ') || 'all circuits open'}`);
  }
}

/** No facilitator taking payments, as the 503 a paid request answers (nothing was charged); other errors as they are. */
export function unavailable(err: unknown, log: Pick<Logger, 'warn'>): unknown {
  if (!(err instanceof AllFacilitatorsUnavailableError)) return err;
  log.warn({ errors: err.errors }, 'no facilitator available');
  return new ServiceUnavailableError(
    'No payment facilitator is available right now; nothing was charged',
    err.retryAfterSeconds,
    'facilitator_unavailable',
  );
}

/**
 * The exact scheme's answer for a transaction sent whose receipt did not come within its
 * confirmation timeout (`@x402/evm`): not a refusal, the transfer may still land.
 */
const SETTLEMENT_PENDING = 'settlement_pending';

/**
 * A settle call that failed without an answer (timeout, 5xx, connection cut after sending):
 * the transfer may or may not have happened, so it is resolved from the chain, never retried
 * blindly on another facilitator.
 */
export class SettlementIndeterminateError extends Error {
  constructor(
    readonly facilitator: string,
    cause: unknown,
  ) {
    super(`settlement via ${facilitator} ended without an answer: ${messageOf(cause)}`, { cause });
  }
}

export interface PoolOptions {
  /** Consecutive failures that open a breaker. */
  failureThreshold?: number;
  /** How long an open breaker waits before its trial call. */
  halfOpenAfterMs?: number;
  /** The longest a trial call may take before it counts as failed (the facilitator timeout). */
  trialTimeoutMs?: number;
  log?: Pick<Logger, 'info' | 'warn'>;
}

/**
 * Facilitators in preference order, each behind a cockatiel circuit breaker. `verify` fails
 * over to the next facilitator when one errors (verifying moves no money). `settle` fails over
 * only when a breaker refused the call before anything was sent; an error after sending, and a
 * `settlement_pending` answer (sent, receipt not seen in time), are indeterminate and surface as
 * `SettlementIndeterminateError`.
 *
 * Payments only go through closed breakers. cockatiel half-opens a breaker only when something
 * calls through it after `halfOpenAfterMs`, and with a healthy member further down the list no
 * payment ever would, so an open breaker would stay open for good; and a payment made the trial
 * would be a settlement risked on a facilitator that may still be down. So the pool runs each
 * trial itself, on a timer, with the member's `ping` (bounded by `trialTimeoutMs`): a success
 * closes the breaker, a failure opens it for another `halfOpenAfterMs` and schedules the next.
 */
export class FacilitatorPool {
  private readonly members: Member[];
  readonly halfOpenAfterMs: number;
  private readonly trialTimeoutMs: number;
  private closed = false;

  constructor(facilitators: Facilitator[], opts: PoolOptions = {}) {
    this.halfOpenAfterMs = opts.halfOpenAfterMs ?? 15_000;
    this.trialTimeoutMs = opts.trialTimeoutMs ?? 10_000;
    this.members = facilitators.map((facilitator) =>
      breakerMember(facilitator, {
        halfOpenAfterMs: this.halfOpenAfterMs,
        failureThreshold: opts.failureThreshold ?? 3,
        log: opts.log,
        onOpen: (member) => this.scheduleTrial(member, this.halfOpenAfterMs),
      }),
    );
  }

  get size(): number {
    return this.members.length;
  }

  /** Stops the trial timers (shutdown). A trial already in flight ends within `trialTimeoutMs` and schedules nothing. */
  close(): void {
    this.closed = true;
    for (const m of this.members) {
      clearTimeout(m.trialTimer);
      m.trialTimer = undefined;
    }
  }

  /**
   * The facilitator that would take a settlement now (the first whose breaker is closed), if
   * its settle verifies by itself: then the paywall settles directly, without a separate verify.
   */
  settlerThatVerifies(): string | undefined {
    const next = this.members.find(takesPayments);
    return next?.facilitator.settleVerifies ? next.facilitator.name : undefined;
  }

  /** The cached breaker state of each facilitator (what this process has seen; no network). */
  snapshot(): FacilitatorStatus[] {
    return this.members.map((m) => ({ ...m.status, state: STATE_NAMES[m.breaker.state] }));
  }

  /** Probes every facilitator's `/supported` now, with a timeout; does not count towards breakers. */
  async probe(timeoutMs = 3000) {
    return Promise.all(
      this.members.map(async ({ facilitator }) => {
        const started = performance.now();
        try {
          const supported = await withTimeout(facilitator.supported(), timeoutMs, 'GET /supported');
          return {
            name: facilitator.name,
            kind: facilitator.kind,
            url: facilitator.url,
            ok: true,
            latencyMs: Math.round(performance.now() - started),
            kinds: supported.kinds.map((k) => ({ x402Version: k.x402Version, scheme: k.scheme, network: k.network })),
            error: null as string | null,
          };
        } catch (err) {
          return {
            name: facilitator.name,
            kind: facilitator.kind,
            url: facilitator.url,
            ok: false,
            latencyMs: Math.round(performance.now() - started),
            kinds: [],
            error: messageOf(err).slice(0, 300),
          };
        }
      }),
    );
  }

  /** Verifies with the first facilitator that answers; verifying moves no money, so any may. */
  async verify(request: FacilitatorRequest): Promise<{ result: VerifyResponse; facilitator: string }> {
    const errors: string[] = [];
    for (const m of this.members) {
      if (!takesPayments(m)) {
        errors.push(`${m.facilitator.name}: circuit ${STATE_NAMES[m.breaker.state]}`);
        continue;
      }
      try {
        const result = await m.breaker.execute(() => m.facilitator.verify(request));
        return { result, facilitator: m.facilitator.name };
      } catch (err) {
        errors.push(`${m.facilitator.name}: ${err instanceof BrokenCircuitError ? 'circuit open' : messageOf(err)}`);
      }
    }
    throw new AllFacilitatorsUnavailableError(this.retryAfterSeconds(), errors);
  }

  /**
   * Settles through `preferred` (the facilitator that verified) when it is available, else the
   * next one. `ready` is the payment being recorded as sent for settlement (Facilitator.settle);
   * when it fails, the NotSentError comes back as it is: nothing was sent, no facilitator failed.
   */
  async settle(
    request: FacilitatorRequest,
    preferred?: string,
    ready?: Promise<void>,
  ): Promise<{ result: SettleResponse; facilitator: string }> {
    const ordered = preferred
      ? [
          ...this.members.filter((m) => m.facilitator.name === preferred),
          ...this.members.filter((m) => m.facilitator.name !== preferred),
        ]
      : this.members;
    const errors: string[] = [];
    for (const m of ordered) {
      if (!takesPayments(m)) {
        errors.push(`${m.facilitator.name}: circuit ${STATE_NAMES[m.breaker.state]}`);
        continue;
      }
      let sent = false;
      try {
        const result = await m.breaker.execute(() => {
          sent = true;
          const { facilitator } = m;
          return facilitator.settleTakesReady
            ? facilitator.settle(request, ready)
            : whenReady(ready, () => facilitator.settle(request));
        });
        if (!result.success && result.errorReason === SETTLEMENT_PENDING) {
          // Sent, but its receipt did not come in time: the transfer may still be mined.
          throw new SettlementIndeterminateError(
            m.facilitator.name,
            new Error(
              `${SETTLEMENT_PENDING}: transaction ${result.transaction || 'unknown'}; ${result.errorMessage ?? ''}`,
            ),
          );
        }
        return { result, facilitator: m.facilitator.name };
      } catch (err) {
        if (!sent) {
          errors.push(`${m.facilitator.name}: circuit open`);
          continue;
        }
        if (err instanceof SettlementIndeterminateError || err instanceof NotSentError) throw err;
        throw new SettlementIndeterminateError(m.facilitator.name, err);
      }
    }
    throw new AllFacilitatorsUnavailableError(this.retryAfterSeconds(), errors);
  }

  private retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.halfOpenAfterMs / 1000));
  }

  private scheduleTrial(m: Member, delayMs: number): void {
    clearTimeout(m.trialTimer);
    m.trialTimer = undefined;
    if (this.closed) return;
    // Unref'd: a pending trial never keeps a process alive that has nothing else to do.
    m.trialTimer = setTimeout(() => void this.trial(m), delayMs).unref();
  }

  /**
   * The half-open trial: `execute` on an open breaker whose delay has passed is what makes
   * cockatiel half-open it and count the outcome. Never throws; a failure re-opens the breaker,
   * whose state listener schedules the next trial.
   */
  private async trial(m: Member): Promise<void> {
    m.trialTimer = undefined;
    if (this.closed || m.breaker.state !== CircuitState.Open) return;
    try {
      await m.breaker.execute(() =>
        withTimeout(m.facilitator.ping(), this.trialTimeoutMs, `${m.facilitator.name}'s trial`),
      );
    } catch (err) {
      // A timer can fire a moment before cockatiel's Date.now() says the delay has passed, and
      // then the breaker refuses the call while staying open: try again when it is due.
      if (err instanceof BrokenCircuitError && m.breaker.state === CircuitState.Open) {
        this.scheduleTrial(m, Math.max(5, this.halfOpenAfterMs - (Date.now() - m.openedAtMs)));
      }
    }
  }
}
