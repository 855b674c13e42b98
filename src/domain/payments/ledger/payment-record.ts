import type { SettleResponse } from '@x402/core/types';
import { isAddress, type Address } from 'viem';
import { z } from 'zod';
import type { Payment } from '../../../data/schema.js';
import { OFFER_RECEIPT, type EIP712SignedReceipt, type ReceiptIssuer } from '../protocol/extensions/offer-receipt.js';
import type { DecodedPayment, FacilitatorRequest } from '../protocol/x402-codec.js';

/**
 * What the payment record holds of its x402 exchange, read back as types: the payload exactly as
 * it was received (loose objects keep every field, since the facilitator checks the signature
 * over them) and the requirements it was checked against.
 */
const Caip2 = z.templateLiteral([z.string(), ':', z.string()]);
const AddressText = z.custom<Address>((v) => typeof v === 'string' && isAddress(v, { strict: false }));

const RequirementsV2 = z.looseObject({
  scheme: z.string(),
  network: Caip2,
  asset: z.string(),
  amount: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.number(),
  extra: z.record(z.string(), z.unknown()),
});

const PayloadV2 = z.looseObject({
  x402Version: z.number(),
  resource: z
    .looseObject({ url: z.string(), description: z.string().optional(), mimeType: z.string().optional() })
    .optional(),
  accepted: RequirementsV2,
  payload: z.record(z.string(), z.unknown()),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

const RequirementsV1 = z.looseObject({
  scheme: z.literal('exact'),
  network: z.string(),
  maxAmountRequired: z.string(),
  resource: z.string(),
  description: z.string(),
  mimeType: z.string(),
  payTo: AddressText,
  maxTimeoutSeconds: z.number(),
  asset: AddressText,
  extra: z.looseObject({ name: z.string(), version: z.string() }),
});

const PayloadV1 = z.looseObject({
  x402Version: z.number(),
  scheme: z.string(),
  network: z.string(),
  payload: z.record(z.string(), z.unknown()),
});

const StoredRequest = z.discriminatedUnion('x402Version', [
  z.object({ x402Version: z.literal(2), payload: PayloadV2, requirements: RequirementsV2 }),
  z.object({ x402Version: z.literal(1), payload: PayloadV1, requirements: RequirementsV1 }),
]);

/**
 * The facilitator request a payment was claimed with, parsed back from its record (a settlement
 * retry sends exactly it again). Throws a ZodError for a record this service did not write.
 */
export function storedFacilitatorRequest(p: Payment): FacilitatorRequest {
  return StoredRequest.parse({ x402Version: p.protocol_version, payload: p.payload, requirements: p.requirements });
}

/** The signed authorization inside a stored payload (both versions keep it under `payload`). */
const StoredAuthorization = z.object({
  payload: z
    .object({
      signature: z.unknown(),
      authorization: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
});

/** Whether a stored payload and a decoded header carry the same signed authorization (either protocol version). */
export function samePayment(stored: Record<string, unknown>, decoded: DecodedPayment): boolean {
  const parsed = StoredAuthorization.safeParse(stored);
  const inner = parsed.success ? parsed.data.payload : undefined;
  const storedSig = String(inner?.signature ?? '').toLowerCase();
  const signature = String(decoded.payload.payload.signature ?? '').toLowerCase();
  if (!storedSig || storedSig !== signature) return false;
  const a = inner?.authorization ?? {};
  const d = decoded.authorization;
  return (
    String(a.from).toLowerCase() === d.from.toLowerCase() &&
    String(a.to).toLowerCase() === d.to.toLowerCase() &&
    String(a.value) === d.value.toString() &&
    String(a.validAfter) === d.validAfter.toString() &&
    String(a.validBefore) === d.validBefore.toString() &&
    String(a.nonce).toLowerCase() === d.nonce
  );
}

/**
 * The settlement receipt of a settled payment, in the x402 SettleResponse shape. Payments are
 * recorded with CAIP-2 networks whatever version paid them; a bare chain id is read as EIP-155.
 */
export function receiptOf(p: Payment): SettleResponse {
  const network = Caip2.safeParse(p.network);
  return {
    success: true,
    transaction: p.tx_hash ?? '',
    network: network.success ? network.data : `eip155:${p.network}`,
    payer: p.payer,
  };
}

/**
 * The settlement a settled payment is answered with, first answer or replay: the x402
 * SettleResponse with the signed offer-receipt receipt in its extensions (none when the extensions
 * are off). `signed` is a receipt already signed for exactly this payment.
 */
export async function settlementOf(
  receipts: ReceiptIssuer | undefined,
  payment: Payment,
  signed?: EIP712SignedReceipt,
): Promise<SettleResponse> {
  if (!receipts) return receiptOf(payment);
  const receipt = signed ?? (await receipts.receiptFor(payment));
  return { ...receiptOf(payment), extensions: { [OFFER_RECEIPT]: { info: { receipt } } } };
}
