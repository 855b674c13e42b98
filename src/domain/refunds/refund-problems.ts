import { AppError, ServiceUnavailableError } from '../../platform/errors.js';

/**
 * Every refusal of the refund routes, by stable code: its status and its sentence. Nothing is
 * written when one is answered. The routes' OpenAPI descriptions and docs/refunds.md name these.
 */
export const REFUND_PROBLEMS = {
  text_control_characters: {
    status: 400,
    detail:
      'The text holds control characters (only line feeds (\\n) and tabs (\\t) are allowed) or is not well-formed Unicode (a lone surrogate)',
  },
  signature_invalid: {
    status: 401,
    detail:
      'Sign in with the agent token of the buying wallet, or sign the RefundRequest (EIP-712) with the buying wallet',
  },
  signature_expired: { status: 401, detail: 'issuedAt must be within 10 minutes of now: sign the request again' },
  not_buyer: { status: 403, detail: 'Only the wallet that paid for the purchase may ask for its refund' },
  not_seller: { status: 403, detail: 'Only the seller of the purchase may answer it' },
  purchase_not_found: { status: 404, detail: 'No purchase was paid with this payment' },
  refund_request_not_found: { status: 404, detail: 'No refund was requested for this purchase' },
  refund_not_found: { status: 404, detail: 'This purchase has neither a refund request nor a refund' },
  refund_window_closed: { status: 409, detail: 'The refund window of this purchase has closed' },
  refund_already_requested: { status: 409, detail: 'A refund of this purchase was requested already' },
  signature_replayed: {
    status: 409,
    detail: 'This signed request was received already: one refund request per purchase',
  },
  purchase_refunded: { status: 409, detail: 'This purchase is refunded already' },
  refund_request_closed: { status: 409, detail: 'This refund request was answered already' },
  refund_in_flight: {
    status: 409,
    detail:
      'A refund of this purchase is being relayed: its outcome decides (GET the refund); a new one may follow only if it fails',
  },
  refund_nonce_used: { status: 409, detail: 'This authorization nonce was used before: sign with a new nonce' },
  refund_wrong_payer: {
    status: 422,
    detail: 'The authorization must come from the payout wallet the purchase paid (its payTo)',
  },
  refund_wrong_payee: { status: 422, detail: 'The authorization must pay the buyer wallet of the purchase' },
  refund_wrong_amount: { status: 422, detail: 'The authorization must pay exactly the amount of the purchase' },
  refund_signature_invalid: {
    status: 422,
    detail:
      "The authorization's signature is not the payer's TransferWithAuthorization for this market's USDC (EIP-712 domain name, version, chainId, verifyingContract)",
  },
  refund_authorization_expired: {
    status: 422,
    detail:
      'The authorization must be valid now (validAfter in the past), for at least 60 seconds more and at most 15 minutes (validBefore)',
  },
  refund_asset_mismatch: {
    status: 409,
    detail:
      'The purchase was paid in another asset or on another chain than the USDC refunds are relayed in: the marketplace cannot refund it',
  },
  refund_relay_failed: {
    status: 502,
    detail: 'The facilitator did not settle the refund; nothing moved: sign a new authorization to try again',
  },
} as const satisfies Record<string, { status: number; detail: string }>;

export type RefundProblemCode = keyof typeof REFUND_PROBLEMS;

/** The refusal of `code`, with its sentence unless `detail` says more. */
export function refundProblem(code: RefundProblemCode, detail?: string, details?: Record<string, unknown>): AppError {
  const problem = REFUND_PROBLEMS[code];
  return new AppError(problem.status, code, detail ?? problem.detail, details);
}

/** No facilitator takes calls right now (every breaker open): 503 with Retry-After; nothing moved. */
export function relayUnavailable(retryAfterSeconds: number): ServiceUnavailableError {
  return new ServiceUnavailableError(
    'No payment facilitator is available right now; the refund moved nothing: sign a new authorization and try again',
    retryAfterSeconds,
    'refund_relay_failed',
  );
}
