import { getAddress, isHex, type Address } from 'viem';
import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { decodePayment as decodeV1Payment } from 'x402/schemes';
import type { UsdcInfo } from '../../../platform/blockchain.js';
import { findUnstorable } from '../../../platform/text.js';
import { v1NetworkName } from '../../../platform/chain/networks.js';
import type { ChallengeExtensions } from './extensions/declare.js';

/**
 * The x402 wire formats of both protocol versions, built on the official packages' types and
 * codecs: v1 (`X-PAYMENT`, 402 JSON body, `X-PAYMENT-RESPONSE`, network names like
 * `base-sepolia`) and v2 (`PAYMENT-SIGNATURE`, base64 `PAYMENT-REQUIRED`, `PAYMENT-RESPONSE`,
 * CAIP-2 networks). One 402 answer carries both: the v2 challenge in its header, the v1 one in
 * its body, so a client of either generation can pay the same route.
 */

export const HEADER_V1 = 'x-payment';
export const HEADER_V2 = 'payment-signature';
export const RESPONSE_HEADER_V1 = 'X-PAYMENT-RESPONSE';
export const RESPONSE_HEADER_V2 = 'PAYMENT-RESPONSE';
export const REQUIRED_HEADER_V2 = 'PAYMENT-REQUIRED';

// Part of the wire format, so the payment code finds it here with the rest of it.
export { v1NetworkName };

/** What a paid resource asks for; both protocol versions' requirements are derived from it. */
export interface PaymentTerms {
  amountAtomic: bigint;
  payTo: Address;
  asset: UsdcInfo;
  chainId: number;
  /** Absolute URL of the paid resource. */
  resourceUrl: string;
  description: string;
  mimeType: string;
  maxTimeoutSeconds: number;
}

/** x402 v1 requirement, field for field what x402 1.x clients validate. */
export type RequirementsV1 = {
  scheme: 'exact';
  network: string;
  maxAmountRequired: string;
  resource: string;
  description: string;
  mimeType: string;
  payTo: Address;
  maxTimeoutSeconds: number;
  asset: Address;
  extra: { name: string; version: string };
};

/**
 * An x402 v1 payment payload (`X-PAYMENT`). Its network is a v1 name (`base-sepolia`), which
 * @x402/core's own v1 type (CAIP-2 networks only) cannot hold.
 */
export type PaymentPayloadV1 = {
  x402Version: number;
  scheme: string;
  network: string;
  payload: Record<string, unknown>;
};

/**
 * A payment as a facilitator verifies and settles it: the signed payload and the requirements it
 * pays, both of one protocol version. v1 requirements name the amount `maxAmountRequired` and the
 * network by its v1 name; v2 ones `amount` and CAIP-2.
 */
export type FacilitatorRequest =
  | { x402Version: 2; payload: PaymentPayload; requirements: PaymentRequirements }
  | { x402Version: 1; payload: PaymentPayloadV1; requirements: RequirementsV1 };

/** The x402 v2 requirements of a resource. */
export function requirementsV2(t: PaymentTerms): PaymentRequirements {
  return {
    scheme: 'exact',
    network: `eip155:${t.chainId}`,
    asset: t.asset.address,
    amount: t.amountAtomic.toString(),
    payTo: t.payTo,
    maxTimeoutSeconds: t.maxTimeoutSeconds,
    extra: { name: t.asset.name, version: t.asset.version },
  };
}

/** The x402 v1 requirements of a resource, when its chain has a v1 network name. */
export function requirementsV1(t: PaymentTerms): RequirementsV1 | undefined {
  const network = v1NetworkName(t.chainId);
  if (!network) return undefined;
  return {
    scheme: 'exact',
    network,
    maxAmountRequired: t.amountAtomic.toString(),
    resource: t.resourceUrl,
    description: t.description,
    mimeType: t.mimeType,
    payTo: t.payTo,
    maxTimeoutSeconds: t.maxTimeoutSeconds,
    asset: t.asset.address,
    extra: { name: t.asset.name, version: t.asset.version },
  };
}

export interface Challenge {
  /** Base64 v2 PaymentRequired, for the `PAYMENT-REQUIRED` header. */
  headerV2: string;
  /** The v1 402 body (also readable by humans and by v2 clients that look at bodies). */
  bodyV1: {
    x402Version: 1;
    error: string;
    accepts: RequirementsV1[];
    paymentId?: string;
    reason?: string;
    extensions?: Record<string, unknown>;
  };
}

/**
 * The 402 challenge of a resource; `error` is the reason the last attempt was refused, if any.
 * `ext` adds the listing's service metadata to `resource` and the route's extensions to both
 * versions (v1 clients ignore the body's `extensions` member).
 */
export function challengeFor(
  t: PaymentTerms,
  error: string,
  extra: { paymentId?: string } = {},
  ext?: ChallengeExtensions,
): Challenge {
  const v2: PaymentRequired = {
    x402Version: 2,
    error,
    resource: { url: t.resourceUrl, description: t.description, mimeType: t.mimeType, ...ext?.resource },
    accepts: [requirementsV2(t)],
    ...(ext ? { extensions: ext.extensions } : {}),
  };
  const v1 = requirementsV1(t);
  return {
    headerV2: encodePaymentRequiredHeader(v2),
    bodyV1: {
      x402Version: 1,
      error,
      accepts: v1 ? [v1] : [],
      ...extra,
      ...(ext ? { extensions: ext.extensions } : {}),
    },
  };
}

/** An EIP-3009 TransferWithAuthorization as signed by the payer. */
export interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: `0x${string}`;
}

/** A decoded payment header; `payload` is exactly as received, what the facilitator verifies and settles. */
export type DecodedPayment = DecodedFields &
  ({ version: 2; payload: PaymentPayload } | { version: 1; payload: PaymentPayloadV1 });

interface DecodedFields {
  /** The network the payer says it paid on (v1 name or CAIP-2). */
  network: string;
  scheme: string;
  /** v2 names the asset it accepted; v1 binds the asset only through the signature's domain. */
  asset: Address | undefined;
  authorization: Authorization;
}

export class PaymentHeaderError extends Error {}

/** Reads `PAYMENT-SIGNATURE` (v2, preferred) or `X-PAYMENT` (v1). Returns undefined when neither is present. */
export function decodePaymentHeader(headers: { v1?: string; v2?: string }): DecodedPayment | undefined {
  if (headers.v2) {
    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(headers.v2);
    } catch (err) {
      throw new PaymentHeaderError(`PAYMENT-SIGNATURE is not base64 JSON: ${messageOf(err)}`);
    }
    if (payload?.x402Version !== 2 || typeof payload.accepted !== 'object' || payload.accepted === null) {
      throw new PaymentHeaderError('PAYMENT-SIGNATURE is not an x402 v2 payment payload');
    }
    assertStorable(payload, 'PAYMENT-SIGNATURE');
    return {
      version: 2,
      payload,
      network: payload.accepted.network,
      scheme: payload.accepted.scheme,
      asset: safeAddress(payload.accepted.asset),
      authorization: authorizationOf(payload.payload),
    };
  }
  if (headers.v1) {
    let payload: ReturnType<typeof decodeV1Payment>;
    try {
      payload = decodeV1Payment(headers.v1);
    } catch (err) {
      throw new PaymentHeaderError(`X-PAYMENT is not an x402 v1 payment payload: ${messageOf(err).slice(0, 200)}`);
    }
    assertStorable(payload, 'X-PAYMENT');
    return {
      version: 1,
      payload,
      network: payload.network,
      scheme: payload.scheme,
      asset: undefined,
      authorization: authorizationOf(payload.payload),
    };
  }
  return undefined;
}

/** The payload is stored as the payment's record: text PostgreSQL cannot hold is refused here. */
function assertStorable(payload: unknown, header: string): void {
  const found = findUnstorable(payload);
  if (found) throw new PaymentHeaderError(`${header} field ${found.path || '(root)'} ${found.reason}`);
}

/** EIP-3009's uint256 fields, in the decimal form both protocol versions send. */
const UINT256_DECIMAL = /^(0|[1-9][0-9]{0,77})$/;
const MAX_UINT256 = 2n ** 256n - 1n;

function uint256(name: string, value: unknown): bigint {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !UINT256_DECIMAL.test(text))
    throw new Error(`${name} must be a non-negative decimal integer`);
  const n = BigInt(text);
  if (n > MAX_UINT256) throw new Error(`${name} does not fit in uint256`);
  return n;
}

function safeAddress(value: unknown): Address | undefined {
  try {
    return getAddress(String(value));
  } catch {
    return undefined;
  }
}

/** A field of a value parsed from JSON, or undefined when the value is not an object. */
function fieldOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
}

function authorizationOf(payload: Record<string, unknown>): Authorization {
  const a = payload?.authorization ?? {};
  try {
    const nonce = String(fieldOf(a, 'nonce'));
    if (!/^0x[0-9a-fA-F]{64}$/.test(nonce)) throw new Error('nonce must be 32 bytes of hex');
    if (typeof payload.signature !== 'string' || !/^0x([0-9a-fA-F]{2}){1,4096}$/.test(payload.signature)) {
      throw new Error('signature must be hex bytes');
    }
    const lowerNonce = nonce.toLowerCase();
    if (!isHex(lowerNonce)) throw new Error('nonce must be 32 bytes of hex');
    return {
      from: getAddress(String(fieldOf(a, 'from'))),
      to: getAddress(String(fieldOf(a, 'to'))),
      value: uint256('value', fieldOf(a, 'value')),
      validAfter: uint256('validAfter', fieldOf(a, 'validAfter')),
      validBefore: uint256('validBefore', fieldOf(a, 'validBefore')),
      nonce: lowerNonce,
    };
  } catch (err) {
    throw new PaymentHeaderError(`payment payload has no valid EIP-3009 authorization: ${messageOf(err)}`);
  }
}

/**
 * The settlement receipt header of the version the client paid with. Both versions send the
 * receipt as base64 JSON; it names the network as recorded (CAIP-2) for either.
 */
export function settlementHeader(version: 1 | 2, settle: SettleResponse): [string, string] {
  return [version === 2 ? RESPONSE_HEADER_V2 : RESPONSE_HEADER_V1, encodePaymentResponseHeader(settle)];
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
