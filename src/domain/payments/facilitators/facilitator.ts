import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import type { FacilitatorRequest, PaymentPayloadV1, RequirementsV1 } from '../protocol/x402-codec.js';

/**
 * One interface over every facilitator: the built-in one (the official x402 facilitator with a
 * local key, in this process, `builtin-facilitator.ts`) and remote ones over the facilitator HTTP
 * API (`remote-facilitator.ts`). The pool (`pool.ts`) puts each behind its own
 * circuit breaker and tries them in order.
 */
export interface Facilitator {
  name: string;
  kind: 'builtin' | 'remote';
  url?: string;
  /**
   * Whether `settle` itself runs the complete verification, simulation included, before it sends
   * anything. Then a separate `verify` call repeats work (a signature recovery and several RPCs).
   */
  settleVerifies: boolean;
  verify(request: FacilitatorRequest): Promise<VerifyResponse>;
  /**
   * Whether `settle` takes `ready` (the payment being recorded as sent for settlement) and works
   * meanwhile: it checks and simulates, sends nothing before `ready` resolves and nothing at all if
   * it rejects (then it rejects with `NotSentError`). The pool calls any other facilitator only
   * once `ready` has resolved.
   */
  settleTakesReady?: boolean;
  settle(request: FacilitatorRequest, ready?: Promise<void>): Promise<SettleResponse>;
  supported(): Promise<SupportedKinds>;
  /**
   * A call that moves no money and succeeds only when the facilitator can work now: the trial a
   * half-open breaker lets through, so that no payment is ever the trial.
   */
  ping(): Promise<void>;
}

/** The payment kinds a facilitator takes; a v1 kind names its network by its v1 name. */
export interface SupportedKinds {
  kinds: Array<{ x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }>;
}

/**
 * What @x402/core's facilitator and its HTTP client take at run time: they dispatch on the
 * payload's `x402Version` (the v1 scheme registered with `registerV1`, the HTTP API's v1
 * requests), while their declarations name only the v2 shapes. Declared with method syntax, so
 * either library object is assignable to it as it is; `callsOf` is the one place that says so.
 */
export interface VersionedFacilitatorCalls {
  verify(
    payload: PaymentPayload | PaymentPayloadV1,
    requirements: PaymentRequirements | RequirementsV1,
  ): Promise<VerifyResponse>;
  settle(
    payload: PaymentPayload | PaymentPayloadV1,
    requirements: PaymentRequirements | RequirementsV1,
  ): Promise<SettleResponse>;
}

/** The library object seen with the parameter types it accepts at run time (see `VersionedFacilitatorCalls`). */
export function callsOf(library: VersionedFacilitatorCalls): VersionedFacilitatorCalls {
  return library;
}

/**
 * A settlement given up before anything was sent, because the payment could not be recorded as
 * being settled (`cause`): no money moved, and the facilitator is not at fault.
 */
export class NotSentError extends Error {
  constructor(cause: unknown) {
    super(`settlement not sent: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Runs `send` once `ready` resolves; when it rejects, sends nothing and rejects with NotSentError. */
export async function whenReady<T>(ready: Promise<void> | undefined, send: () => Promise<T>): Promise<T> {
  if (ready) {
    try {
      await ready;
    } catch (err) {
      throw new NotSentError(err);
    }
  }
  return send();
}

/** What a reason code may look like: the snake_case codes of the x402 schemes and facilitators. */
const REASON_CODE = /^[a-z][a-z0-9_]{0,79}$/;

/**
 * A facilitator's refusal as it may be stored and answered: its reason when that is a snake_case
 * code, with its message; otherwise (a library's raw error text, which may name a node's URL and
 * its key) `fallback` and a message of ours, and the text is for the log only.
 */
export function refusalOf(
  reason: string | undefined,
  message: string | undefined,
  fallback: string,
): { reason: string; detail: string; raw?: string } {
  if (reason !== undefined && REASON_CODE.test(reason)) {
    return { reason, detail: (message ?? `The facilitator refused the payment: ${reason}`).slice(0, 300) };
  }
  return { reason: fallback, detail: `The facilitator refused the payment: ${fallback}`, raw: reason ?? message };
}
