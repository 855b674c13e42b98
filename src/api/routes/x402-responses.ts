/** The documented responses every x402-paid operation shares. */
export const X402_RESPONSES = {
  402: {
    description:
      'Payment Required (x402). Body: x402 v1 challenge `{x402Version:1, error, accepts}` merged with problem details; header PAYMENT-REQUIRED: x402 v2 challenge (base64). `code` names why the last attempt was refused.',
    headers: {
      'PAYMENT-REQUIRED': 'x402 v2 PaymentRequired, base64 JSON',
      'X-Payment-Id': 'the payment this attempt created, when one was',
    },
  },
  503: {
    description: 'No facilitator is available; nothing was charged (Retry-After)',
    headers: { 'Retry-After': 'seconds' },
  },
};
