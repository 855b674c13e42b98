/**
 * The paywall's own refusals, by stable code: the status each is stated with and its sentence.
 * A facilitator's refusal keeps the facilitator's reason code (`invalid_exact_evm_*`,
 * `settlement_failed`) and a terms mismatch its own (`invalid_exact_evm_payload_*`), both 402.
 */
export const REFUSALS = {
  payment_required: { status: 402, detail: 'Pay with X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2)' },
  invalid_payment_header: { status: 402, detail: 'The payment could not be read' },
  settlement_pending: { status: 402, detail: '' },
  payment_claim_expired: {
    status: 402,
    detail: 'This payment took too long to process and was released; send it again',
  },
  invalid_exact_evm_nonce_already_used: {
    status: 402,
    detail: 'This authorization nonce belongs to another payment',
  },
  payment_already_used: {
    status: 402,
    detail:
      'This payment is settled. Buyers keep access: read again with Sign-In-With-X (SIGN-IN-WITH-X) or an agent token (Authorization: Bearer) for the paying wallet',
  },
  payment_in_progress: {
    status: 409,
    detail:
      'This payment is being settled for the request that sent it first; only that request is answered. ' +
      'The payer reads what it bought once settled, with Sign-In-With-X (SIGN-IN-WITH-X) or its agent token',
  },
  payment_identifier_conflict: {
    status: 409,
    detail: 'This payment identifier was sent with another payment: use a new identifier for a new payment',
  },
  handle_taken: { status: 409, detail: 'Another registration for this handle is being paid right now' },
  wallet_registered: { status: 409, detail: 'Another registration for this wallet is being paid right now' },
} as const satisfies Record<string, { status: 402 | 409; detail: string }>;

export type RefusalCode = keyof typeof REFUSALS;

/** The refusals stated with 409: the payment, its identifier, or the registration is another request's. */
export type ConflictCode = { [C in RefusalCode]: (typeof REFUSALS)[C]['status'] extends 409 ? C : never }[RefusalCode];
