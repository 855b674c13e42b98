import * as ecc from 'tiny-secp256k1';
import {
  bytesToHex,
  getAddress,
  getTypesForEIP712Domain,
  hashDomain,
  hashStruct,
  hexToBytes,
  validateTypedData,
  type Address,
  type Hex,
  type TypedData,
  type TypedDataDefinition,
} from 'viem';
import { flatStructHash } from './flat-struct-hash.js';
import { keccak256Bytes } from './keccak.js';

/**
 * secp256k1 on the paid path through libsecp256k1 compiled to WebAssembly (`tiny-secp256k1`):
 * recovering a signer is about seven times faster than viem's pure-JavaScript curve, and signing
 * about three times (docs/benchmarks.md). Both produce what viem produces: RFC 6979 deterministic
 * signatures with a low `s`, serialized `r ‖ s ‖ v` with `v` 27 or 28.
 */

/** The address that signed `hash`, or undefined when the signature is not a valid 65-byte ECDSA one. */
export function recoverHashSigner(hash: Hex, signature: Hex): Address | undefined {
  const bytes = hexToBytes(signature);
  if (bytes.length !== 65) return undefined;
  const v = bytes[64] ?? 0;
  const recoveryId = v >= 27 ? v - 27 : v;
  if (recoveryId !== 0 && recoveryId !== 1) return undefined;
  let publicKey: Uint8Array | null;
  try {
    publicKey = ecc.recover(hexToBytes(hash), bytes.subarray(0, 64), recoveryId, false);
  } catch {
    return undefined;
  }
  if (!publicKey) return undefined;
  return getAddress(bytesToHex(keccak256Bytes(publicKey.subarray(1)).subarray(12)));
}

/** Signs a 32-byte hash: `r ‖ s ‖ v` with `v` 27 or 28, as viem's `sign` serializes it. */
export function signHash(hash: Hex, privateKey: Hex): Hex {
  const { signature, recoveryId } = ecc.signRecoverable(hexToBytes(hash), hexToBytes(privateKey));
  const out = new Uint8Array(65);
  out.set(signature);
  out[64] = 27 + recoveryId;
  return bytesToHex(out);
}

/** Each EIP-712 domain's separator, by `keyedDomain`'s key: a process signs and checks in a handful of domains. */
const separators = new Map<string, Uint8Array>();
const SEPARATORS_KEPT = 64;
const EIP712_PREFIX = new Uint8Array([0x19, 0x01]);

/**
 * The EIP-712 digest of typed data, as viem's `hashTypedData` computes it (validation included),
 * with each domain's separator computed once (it cost as much as the rest of the digest) and a flat
 * struct's hash computed without viem (src/platform/flat-struct-hash.ts): a receipt, a purchase
 * statement and an EIP-3009 authorization are flat.
 */
export function typedDataHash<const T extends TypedData | Record<string, unknown>, P extends keyof T | 'EIP712Domain'>(
  typed: TypedDataDefinition<T, P>,
): Hex {
  const {
    domain: given = {},
    message,
    primaryType,
  } = typed as unknown as {
    domain?: Record<string, unknown> | null;
    message?: Record<string, unknown>;
    primaryType: string;
  };
  const stated = (typed.types ?? {}) as Record<string, unknown>;
  // Kept only for the domain type derived from the domain: one stated in `types` may refer to other types.
  const keyed = Object.hasOwn(stated, 'EIP712Domain') ? undefined : keyedDomain(given);
  const key = keyed?.key;
  // viem reads the copy the key was made of, so what is kept under a key is what the key says.
  const domain = keyed ? keyed.values : given;
  const known = key === undefined ? undefined : separators.get(key);
  const flat = primaryType === 'EIP712Domain' ? undefined : flatStructHash(stated, primaryType, message);
  // A kept separator's domain passed viem's checks when it was computed (they read only what the
  // key holds, and a flat struct's `types` name no atomic type), and a flat struct's values are
  // checked as they are encoded.
  if (known && flat) return bytesToHex(keccak256Bytes(EIP712_PREFIX, known, flat));

  const types = {
    EIP712Domain: getTypesForEIP712Domain({ domain: domain ?? undefined }),
    ...stated,
  } as unknown as TypedData & { EIP712Domain: unknown };
  validateTypedData({ domain, message, primaryType, types } as unknown as Parameters<typeof validateTypedData>[0]);
  const parts: Uint8Array[] = [EIP712_PREFIX];
  // As viem: a domain given as null (or another falsy value) has no separator in the digest.
  if (domain) {
    let separator = known;
    if (!separator) {
      separator = hexToBytes(hashDomain({ domain, types }));
      if (key !== undefined) {
        if (separators.size >= SEPARATORS_KEPT) separators.delete(separators.keys().next().value as string);
        separators.set(key, separator);
      }
    }
    parts.push(separator);
  }
  if (primaryType !== 'EIP712Domain')
    parts.push(flat ?? hexToBytes(hashStruct({ data: message ?? {}, primaryType, types })));
  return bytesToHex(keccak256Bytes(...parts));
}

/**
 * What a domain's separator and viem's checks of it depend on: the five values the derived
 * EIP712Domain type reads, each with its JavaScript type (`key`), read once into `values`.
 * Undefined (not kept) for a domain that is not a plain object of such values.
 */
function keyedDomain(domain: unknown): { key: string; values: Record<string, unknown> } | undefined {
  if (typeof domain !== 'object' || domain === null) return undefined;
  const proto = Object.getPrototypeOf(domain);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const d = domain as Record<string, unknown>;
  const values: Record<string, unknown> = Object.create(null);
  const tagged: unknown[] = [];
  for (const field of ['name', 'version', 'chainId', 'verifyingContract', 'salt']) {
    const v = d[field];
    if (v === undefined) tagged.push(0);
    else if (typeof v === 'string') tagged.push(v);
    else if (typeof v === 'bigint') tagged.push([v.toString()]);
    else if (typeof v === 'number' && Number.isFinite(v)) tagged.push([v]);
    else return undefined;
    if (v !== undefined) values[field] = v;
  }
  return { key: JSON.stringify(tagged), values };
}

/** Signs EIP-712 typed data; byte for byte what viem's `account.signTypedData` returns. */
export function signTypedDataWith<
  const T extends TypedData | Record<string, unknown>,
  P extends keyof T | 'EIP712Domain',
>(privateKey: Hex, typed: TypedDataDefinition<T, P>): Hex {
  return signHash(typedDataHash(typed), privateKey);
}

/** Whether `address` signed the typed data with a plain 65-byte ECDSA signature. */
export function isTypedDataSigner<
  const T extends TypedData | Record<string, unknown>,
  P extends keyof T | 'EIP712Domain',
>(address: Address, typed: TypedDataDefinition<T, P>, signature: Hex): boolean {
  const signer = recoverHashSigner(typedDataHash(typed), signature);
  return signer !== undefined && signer.toLowerCase() === address.toLowerCase();
}
