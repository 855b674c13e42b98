import type { Request, Response } from 'express';
import type { PaywallOutcome, PaywallTimings } from '../../domain/payments/paywall/paywall.js';
import { SIWX_HEADER, type SiwxProof } from '../../domain/payments/paywall/sign-in-with-x.js';
import {
  encodeExtensionResponses,
  EXTENSION_RESPONSES_HEADER,
  extensionOutcomes,
  refusalOutcomes,
} from '../../domain/payments/protocol/extensions/extension-responses.js';
import type { SentPayment } from '../../domain/payments/protocol/x402-codec.js';
import { clientKey } from '../middleware/rate-limit.js';
import { PROBLEM_CONTENT_TYPE, sendProblem } from './problem.js';
import { challengeHeader, HEADER_V1, HEADER_V2, paymentOfHeaders, settlementHeader } from './x402-headers.js';

/** The payment a request sends, read from its x402 headers, as the paywall takes it. */
export const paymentOf = (req: Request): SentPayment | undefined =>
  paymentOfHeaders({ v1: req.get(HEADER_V1) || undefined, v2: req.get(HEADER_V2) || undefined });

/** The request's SIGN-IN-WITH-X proof with the client it is counted against, when the extensions are on. */
export function siwxProofOf(req: Request, extensions: boolean): SiwxProof | undefined {
  const header = extensions ? req.get(SIWX_HEADER) : undefined;
  return header === undefined ? undefined : { header, client: clientKey(req.ip) };
}

/**
 * Sends a paywall outcome over HTTP. A 402 carries both challenges: v2 base64 in PAYMENT-REQUIRED,
 * v1 as the JSON body, which is also an RFC 9457 problem (`code` names the reason). A paid answer
 * carries its settlement in the response header of the version the client paid with.
 */
export function sendPaywallOutcome(
  res: Response,
  outcome: PaywallOutcome,
  timings?: PaywallTimings,
  started?: number,
): void {
  if (outcome.kind === 'conflict') {
    const rejected = refusalOutcomes(outcome.code);
    if (rejected) res.set(EXTENSION_RESPONSES_HEADER, encodeExtensionResponses(rejected));
    sendProblem(res, 409, outcome.code, outcome.detail);
    return;
  }
  if (timings && started !== undefined) {
    const total = performance.now() - started;
    res.set(
      'Server-Timing',
      `app;dur=${(total - timings.facilitatorMs).toFixed(2)}, facilitator;dur=${timings.facilitatorMs.toFixed(2)}`,
    );
  }
  res.set('Cache-Control', 'no-store');
  if (outcome.kind === 'paid') {
    const [name, value] = settlementHeader(outcome.version, outcome.settlement);
    res.set(name, value);
    res.set('X-Payment-Id', outcome.payment.id);
    const outcomes = extensionOutcomes(outcome.payment, outcome.settlement);
    if (outcomes) res.set(EXTENSION_RESPONSES_HEADER, encodeExtensionResponses(outcomes));
    res.status(200).json(outcome.body);
    return;
  }
  const reason = outcome.kind === 'pending' ? 'settlement_pending' : outcome.reason;
  const detail =
    outcome.kind === 'pending'
      ? 'The payment was sent for settlement and its outcome is not known yet; poll the payment, then read what it bought with Sign-In-With-X (SIGN-IN-WITH-X) or an agent token once it is settled, or repeat the request with the same payment-identifier'
      : outcome.detail;
  const paymentId = outcome.kind === 'pending' ? outcome.payment.id : outcome.paymentId;
  res.set(...challengeHeader(outcome.challenge));
  if (paymentId) res.set('X-Payment-Id', paymentId);
  res
    .status(402)
    .type(PROBLEM_CONTENT_TYPE)
    .send(
      JSON.stringify({
        ...outcome.challenge.v1,
        type: `/problems/${reason}`,
        title: 'Payment Required',
        status: 402,
        code: reason,
        detail,
        instance: res.req?.originalUrl,
        ...(paymentId ? { paymentId, paymentUrl: `/api/payments/${paymentId}` } : {}),
      }),
    );
}
