import { CircuitState, ConsecutiveBreaker, circuitBreaker, handleWhen, type CircuitBreakerPolicy } from 'cockatiel';
import type { Logger } from '../../../platform/logger.js';
import { NotSentError, type Facilitator } from './facilitator.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface FacilitatorStatus {
  name: string;
  kind: Facilitator['kind'];
  url?: string;
  state: BreakerState;
  consecutiveFailures: number;
  lastError: string | null;
  lastErrorAt: string | null;
  lastSuccessAt: string | null;
  openedAt: string | null;
}

/** A facilitator in the pool, with its breaker and what this process has seen of it. */
export interface Member {
  facilitator: Facilitator;
  breaker: CircuitBreakerPolicy;
  status: FacilitatorStatus;
  /** When the breaker last opened, on the clock cockatiel uses to decide that a trial is due. */
  openedAtMs: number;
  trialTimer: NodeJS.Timeout | undefined;
}

export const STATE_NAMES: Record<CircuitState, BreakerState> = {
  [CircuitState.Closed]: 'closed',
  [CircuitState.Open]: 'open',
  [CircuitState.HalfOpen]: 'half-open',
  [CircuitState.Isolated]: 'open',
};

export interface BreakerOptions {
  /** How long an open breaker waits before its trial call. */
  halfOpenAfterMs: number;
  /** Consecutive failures that open the breaker. */
  failureThreshold: number;
  log?: Pick<Logger, 'info' | 'warn'>;
  /** Called each time the breaker opens: the pool schedules the trial. */
  onOpen(member: Member): void;
}

/**
 * Puts a facilitator behind its own cockatiel breaker whose listeners keep `status` current
 * (state, failures, last error and success) for the health routes.
 */
export function breakerMember(facilitator: Facilitator, opts: BreakerOptions): Member {
  // A settlement given up because the payment could not be recorded is no failure of the facilitator's.
  const breaker = circuitBreaker(
    handleWhen((err) => !(err instanceof NotSentError)),
    {
      halfOpenAfter: opts.halfOpenAfterMs,
      breaker: new ConsecutiveBreaker(opts.failureThreshold),
    },
  );
  const status: FacilitatorStatus = {
    name: facilitator.name,
    kind: facilitator.kind,
    url: facilitator.url,
    state: 'closed',
    consecutiveFailures: 0,
    lastError: null,
    lastErrorAt: null,
    lastSuccessAt: null,
    openedAt: null,
  };
  const member: Member = { facilitator, breaker, status, openedAtMs: 0, trialTimer: undefined };
  const { log } = opts;
  breaker.onStateChange((s) => {
    status.state = STATE_NAMES[s];
    if (s === CircuitState.Open) {
      member.openedAtMs = Date.now();
      status.openedAt = new Date(member.openedAtMs).toISOString();
      log?.warn(
        { facilitator: facilitator.name, lastError: status.lastError, trialInMs: opts.halfOpenAfterMs },
        'facilitator breaker open',
      );
      opts.onOpen(member);
    }
    if (s === CircuitState.Closed) {
      status.openedAt = null;
      log?.info({ facilitator: facilitator.name }, 'facilitator breaker closed');
    }
  });
  breaker.onFailure(({ reason }) => {
    status.consecutiveFailures += 1;
    status.lastError = 'error' in reason ? messageOf(reason.error).slice(0, 300) : 'failed';
    status.lastErrorAt = new Date().toISOString();
  });
  breaker.onSuccess(() => {
    status.consecutiveFailures = 0;
    status.lastSuccessAt = new Date().toISOString();
  });
  return member;
}

/**
 * Only a closed breaker takes payments. An open one waits for its trial; a half-open one has its
 * trial in flight, and cockatiel would hold a payment sent through it until the trial ends (up to
 * the trial timeout) instead of letting it go to the next facilitator now.
 */
export function takesPayments(m: Member): boolean {
  return m.breaker.state === CircuitState.Closed;
}

/** An error's message, or the thrown value as text when it is not an Error. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
