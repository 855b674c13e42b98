import { paymentOfHeaders } from '../../src/api/http/x402-headers.js';
import { getAddress } from 'viem';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import {
  readPayment,
  requirementsV2,
  type DecodedPayment,
  type PaymentTerms,
} from '../../src/domain/payments/protocol/x402-codec.js';

/**
 * Payment headers as x402 clients send them, for tests of the pure payment checks: fixed
 * addresses, one signed authorization valid around NOW, and the terms of one resource.
 */
export const NOW = 1_800_000_000n;
export const PAY_TO = getAddress('0x2222222222222222222222222222222222222222');
export const PAYER = getAddress('0x1111111111111111111111111111111111111111');
export const USDC = getAddress('0x036cbd53842c5426634e7929541ec2318f3dcf7e');
export const NONCE = `0x${'ab'.repeat(32)}` as const;
export const SIGNATURE = `0x${'11'.repeat(65)}` as const;

/** A resource on Base Sepolia (84532), which x402 v1 calls base-sepolia. */
export const TERMS: PaymentTerms = {
  amountAtomic: 1_000_000n,
  payTo: PAY_TO,
  asset: { address: USDC, name: 'USDC', version: '2', decimals: 6 },
  chainId: 84532,
  resourceUrl: 'https://market.example/api/posts/1?view=full',
  description: 'A skill',
  mimeType: 'application/json',
  maxTimeoutSeconds: 60,
};

export type WireAuthorization = Record<'from' | 'to' | 'value' | 'validAfter' | 'validBefore' | 'nonce', unknown>;

/** PAYER's authorization of 1 USDC to PAY_TO, valid from 10 minutes before NOW to 5 after, changed as asked. */
export const authorization = (over: Partial<WireAuthorization> = {}): WireAuthorization => ({
  from: PAYER,
  to: PAY_TO,
  value: '1000000',
  validAfter: String(NOW - 600n),
  validBefore: String(NOW + 300n),
  nonce: NONCE,
  ...over,
});

/** A PAYMENT-SIGNATURE header: the terms' v2 requirements with `accepted` and the authorization changed as asked. */
export const v2Header = (
  auth: Partial<WireAuthorization> = {},
  accepted: Partial<PaymentRequirements> = {},
  signature: unknown = SIGNATURE,
) =>
  encodePaymentSignatureHeader({
    x402Version: 2,
    accepted: { ...requirementsV2(TERMS), ...accepted },
    payload: { signature, authorization: authorization(auth) },
  } as PaymentPayload);

/** An X-PAYMENT header (base64 JSON, as x402 v1 clients send it). */
export const v1Header = (network: string, auth: Partial<WireAuthorization> = {}, scheme = 'exact') =>
  Buffer.from(
    JSON.stringify({
      x402Version: 1,
      scheme,
      network,
      payload: { signature: SIGNATURE, authorization: authorization(auth) },
    }),
  ).toString('base64');

/** The payment in x402 HTTP headers as the paywall reads it (undefined when no header is sent). */
export function decodePaymentHeader(headers: { v1?: string; v2?: string }): DecodedPayment | undefined {
  const sent = paymentOfHeaders(headers);
  return sent && readPayment(sent);
}
