import { isAddress } from 'viem';
import { keccak256Bytes } from './keccak.js';

/**
 * EIP-712 `hashStruct` for a flat struct: one whose fields are all `string`, `address`, `bool`,
 * `uintN` or `bytes32` (a receipt, a purchase statement, an EIP-3009 authorization). It gives
 * viem's `hashStruct` bytes for the values viem accepts, with the struct's type hash computed
 * once. It answers undefined for anything else (a nested or array type, a signed integer, a value
 * of another JavaScript type or out of range), and the caller then hashes through viem, which
 * validates and refuses as it always has.
 */
export function flatStructHash(
  types: Record<string, unknown>,
  primaryType: string,
  message: Record<string, unknown> | undefined,
): Uint8Array | undefined {
  // viem reads a primary type's name up to its first non-word character, and refuses a struct type
  // named like an atomic one: either falls back to viem.
  // viem reads the types' own enumerable properties (it spreads them).
  if (
    typeof primaryType !== 'string' ||
    !WORD.test(primaryType) ||
    !Object.prototype.propertyIsEnumerable.call(types, primaryType)
  )
    return undefined;
  if (message === undefined || message === null || Object.keys(types).some(isAtomicName)) return undefined;
  const fields = types[primaryType];
  if (!Array.isArray(fields)) return undefined;
  const plan = planOf(primaryType, fields as Field[]);
  if (!plan) return undefined;
  const words: Uint8Array[] = [plan.typeHash];
  for (const field of plan.fields) {
    const word = encodeField(field, message[field.name]);
    if (!word) return undefined;
    words.push(word);
  }
  return keccak256Bytes(...words);
}

const WORD = /^\w+$/;

/** The names viem refuses for a struct type (its `validateReference`). */
const isAtomicName = (type: string) =>
  type === 'address' ||
  type === 'bool' ||
  type === 'string' ||
  type.startsWith('bytes') ||
  type.startsWith('uint') ||
  type.startsWith('int');

interface Field {
  name: string;
  type: string;
}

interface Plan {
  typeHash: Uint8Array;
  fields: (Field & { bits: number })[];
}

/**
 * Plans by encoded type (`Receipt(uint256 version,string network,…)`), which is unambiguous: field
 * names are words and types atomic. Oldest first out.
 */
const plans = new Map<string, Plan | null>();
const PLANS_KEPT = 64;

function planOf(primaryType: string, fields: readonly Field[]): Plan | null {
  // Each field's name and type read once: the plan kept is the one the key describes.
  const read: Field[] = [];
  let encoded = `${primaryType}(`;
  for (const [i, f] of fields.entries()) {
    const name: unknown = f?.name;
    const type: unknown = f?.type;
    if (typeof name !== 'string' || typeof type !== 'string' || !WORD.test(name) || !WORD.test(type)) return null;
    read.push({ name, type });
    encoded += `${i ? ',' : ''}${type} ${name}`;
  }
  encoded += ')';
  const known = plans.get(encoded);
  if (known !== undefined) return known;
  const planned = read.map((f) => ({ ...f, bits: atomicBits(f.type) }));
  const plan = planned.every((f) => f.bits > 0)
    ? { typeHash: keccak256Bytes(utf8.encode(encoded)), fields: planned }
    : null;
  if (plans.size >= PLANS_KEPT) plans.delete(plans.keys().next().value as string);
  plans.set(encoded, plan);
  return plan;
}

/** The width of an unsigned integer type; 1 for the other atomic types handled; 0 when not handled. */
function atomicBits(type: string): number {
  if (type === 'string' || type === 'address' || type === 'bool' || type === 'bytes32') return 1;
  const uint = /^uint(\d{1,3})$/.exec(type);
  const bits = uint ? Number(uint[1]) : 0;
  return bits >= 8 && bits <= 256 && bits % 8 === 0 ? bits : 0;
}

const utf8 = new TextEncoder();
const HEX_32_BYTES = /^0x[0-9a-fA-F]{64}$/;

/** The 32-byte word a field's value encodes to, or undefined when the value is not plainly valid. */
function encodeField(field: Field & { bits: number }, value: unknown): Uint8Array | undefined {
  switch (field.type) {
    case 'string':
      return typeof value === 'string' ? keccak256Bytes(utf8.encode(value)) : undefined;
    case 'address':
      return typeof value === 'string' && isAddress(value) ? hexWord(value.slice(2)) : undefined;
    case 'bool':
      return typeof value === 'boolean' ? integerWord(value ? 1n : 0n) : undefined;
    case 'bytes32':
      return typeof value === 'string' && HEX_32_BYTES.test(value) ? hexWord(value.slice(2)) : undefined;
  }
  const n = typeof value === 'bigint' ? value : Number.isSafeInteger(value) ? BigInt(value as number) : undefined;
  return n !== undefined && n >= 0n && n < 1n << BigInt(field.bits) ? integerWord(n) : undefined;
}

/** Hex digits (at most 64), left-padded to a 32-byte word. */
function hexWord(hex: string): Uint8Array {
  return Buffer.from(hex.padStart(64, '0'), 'hex');
}

function integerWord(n: bigint): Uint8Array {
  return hexWord(n.toString(16));
}
