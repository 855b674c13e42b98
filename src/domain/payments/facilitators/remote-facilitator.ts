import { HTTPFacilitatorClient } from '@x402/core/server';
import type { SettleError, SettleResponse, VerifyError, VerifyResponse } from '@x402/core/types';
import { callsOf, type Facilitator } from './facilitator.js';

/** A remote facilitator over the x402 facilitator HTTP API (`/verify`, `/settle`, `/supported`). */
export function remoteFacilitator(url: string, timeoutMs = 10_000): Facilitator {
  const client = new HTTPFacilitatorClient({ url: url.replace(/\/+$/, ''), timeoutMs });
  const calls = callsOf(client);
  return {
    name: new URL(url).host,
    kind: 'remote',
    url,
    // A remote facilitator's settle may verify too, but its verify is where failover is free.
    settleVerifies: false,
    verify: (r) => verifyAnswerOf(calls.verify(r.payload, r.requirements)),
    settle: (r) => settleAnswerOf(calls.settle(r.payload, r.requirements)),
    supported: () => client.getSupported(),
    ping: async () => {
      await client.getSupported();
    },
  };
}

/**
 * A facilitator that refuses a payment with a 4xx status still answered: the client throws
 * VerifyError or SettleError carrying the response, which is a refusal to pass on, not an outage
 * to count against the breaker (three bad payments would otherwise open it).
 */
async function verifyAnswerOf(call: Promise<VerifyResponse>): Promise<VerifyResponse> {
  try {
    return await call;
  } catch (err) {
    if (!isRefusal(err, 'VerifyError')) throw err;
    return {
      isValid: false,
      invalidReason: err.invalidReason ?? 'invalid_payment',
      invalidMessage: err.invalidMessage,
      payer: err.payer,
    };
  }
}

/** As `verifyAnswerOf`, for a settlement the facilitator refused. */
async function settleAnswerOf(call: Promise<SettleResponse>): Promise<SettleResponse> {
  try {
    return await call;
  } catch (err) {
    if (!isRefusal(err, 'SettleError')) throw err;
    return {
      success: false,
      errorReason: err.errorReason ?? 'settlement_refused',
      errorMessage: err.errorMessage,
      transaction: err.transaction ?? '',
      network: err.network,
      payer: err.payer,
    };
  }
}

interface Refusals {
  VerifyError: VerifyError;
  SettleError: SettleError;
}

/**
 * By class name, not `instanceof`: @x402/core is loaded twice here (its server entry and its
 * types entry reach different copies of the error classes), so `instanceof VerifyError` is false
 * for the very errors HTTPFacilitatorClient throws. Seen in the facilitator tests.
 */
function isRefusal<N extends keyof Refusals>(err: unknown, name: N): err is Refusals[N] {
  return err instanceof Error && err.name === name && 'statusCode' in err && typeof err.statusCode === 'number';
}
