import { getAddress, isHex, type Address } from 'viem';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { PaymentPayloadSchema as PaymentPayloadV1Schema, SupportedEVMNetworks, SupportedSVMNetworks } from 'x402/types';
import type { UsdcInfo } from '../../../platform/blockchain.js';
import { findUnstorable } from '../../../platform/text.js';
import { v1NetworkName } from '../../../platform/chain/networks.js';
import type { ChallengeExtensions } from './extensions/declare.js';

/**
 * The x402 messages of both protocol versions, as objects, built on the official packages' types:
 * v1 (payloads and requirements with network names like `base-sepolia`) and v2 (CAIP-2 networks,
 * `accepted`). One refusal carries both challenges, so a client of either generation can pay the
 * same resource. How a transport carries them (HTTP headers and bodies, MCP `_meta`) is the
 * transport adapter's business (src/api/http/x402.ts, src/api/mcp/buy-skill.ts).
 */

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
  /** The v2 PaymentRequired. */
  v2: PaymentRequired;
  /** The v1 challenge (over HTTP, the 402 body, also readable by humans and by v2 clients that look at bodies). */
  v1: {
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
    v2,
    v1: {
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

/**
 * A payment as a transport hands it over: the parsed x402 PaymentPayload of one protocol version,
 * and where it came from (`via`, named in refusals: a header, an MCP `_meta` key); or why the
 * transport could not read one.
 */
export type SentPayment = { version: 1 | 2; payload: unknown; via: string } | { unreadable: string };

export class PaymentPayloadError extends Error {}

/** Reads a sent payment: an x402 payload of its version with a valid EIP-3009 authorization, or PaymentPayloadError. */
export function readPayment(sent: SentPayment): DecodedPayment {
  if ('unreadable' in sent) throw new PaymentPayloadError(sent.unreadable);
  const { via } = sent;
  if (sent.version === 2) {
    const payload = sent.payload as PaymentPayload;
    if (payload?.x402Version !== 2 || typeof payload.accepted !== 'object' || payload.accepted === null) {
      throw new PaymentPayloadError(`${via} is not an x402 v2 payment payload`);
    }
    assertStorable(payload, via);
    return {
      version: 2,
      payload,
      network: payload.accepted.network,
      scheme: payload.accepted.scheme,
      asset: safeAddress(payload.accepted.asset),
      authorization: authorizationOf(payload.payload),
    };
  }
  let payload: PaymentPayloadV1;
  try {
    const network = fieldOf(sent.payload, 'network');
    const known: readonly unknown[] = [...SupportedEVMNetworks, ...SupportedSVMNetworks];
    if (!known.includes(network)) throw new Error('Invalid network');
    payload = PaymentPayloadV1Schema.parse(sent.payload) as PaymentPayloadV1;
  } catch (err) {
    throw new PaymentPayloadError(`${via} is not an x402 v1 payment payload: ${messageOf(err).slice(0, 200)}`);
  }
  assertStorable(payload, via);
  return {
    version: 1,
    payload,
    network: payload.network,
    scheme: payload.scheme,
    asset: undefined,
    authorization: authorizationOf(payload.payload),
  };
}

/** The payload is stored as the payment's record: text PostgreSQL cannot hold is refused here. */
function assertStorable(payload: unknown, header: string): void {
  const found = findUnstorable(payload);
  if (found) throw new PaymentPayloadError(`${header} field ${found.path || '(root)'} ${found.reason}`);
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
    throw new PaymentPayloadError(`payment payload has no valid EIP-3009 authorization: ${messageOf(err)}`);
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
