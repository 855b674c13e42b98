import { expect } from 'chai';
import fc from 'fast-check';
import { hashTypedData, keccak256, toHex, type Hex } from 'viem';
import { typedDataHash } from '../../src/platform/secp256k1.js';
import { keccak256Bytes } from '../../src/platform/keccak.js';
import { authorizationTypes } from '@x402/evm';
import { RECEIPT_TYPES } from '@x402/extensions/offer-receipt';
import { purchaseTypedData } from '../../src/domain/payments/protocol/extensions/offer-receipt.js';

/** What viem answers for typed data: its digest, or that it refuses. */
function viemAnswer(typed: Parameters<typeof hashTypedData>[0]): Hex | 'refused' {
  try {
    return hashTypedData(typed);
  } catch {
    return 'refused';
  }
}

function ourAnswer(typed: Parameters<typeof hashTypedData>[0]): Hex | 'refused' {
  try {
    return typedDataHash(typed);
  } catch {
    return 'refused';
  }
}

const fieldTypes = ['string', 'address', 'bool', 'bytes32', 'uint8', 'uint64', 'uint256', 'int256', 'bytes', 'Inner'];

/** A value of each kind a caller might pass, well-formed or not, for any field. */
const anyValue = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.bigInt({ min: -(1n << 257n), max: 1n << 257n }),
  fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
  fc.constantFrom(255n, 256n, 1n << 64n, (1n << 256n) - 1n, 1n << 256n, -1n),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => toHex(b)),
  fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => toHex(b).toUpperCase().replace('0X', '0x')),
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => toHex(b)),
  fc.uint8Array({ minLength: 0, maxLength: 40 }).map((b) => toHex(b)),
  fc.stringMatching(/^0x[0-9a-zA-Z]{40}$/),
  fc.stringMatching(/^0x[0-9a-zA-Z]{64}$/),
  fc.constant('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'),
  fc.constant('0x833589fcd6eDb6E08f4c7C32D4f71b54bdA02913'),
  fc.constant(undefined),
  fc.constant(null),
);

/** Domains a caller might pass: the service's own, and ones whose keeping could go wrong. */
const domains = fc.oneof(
  fc.constantFrom<unknown>(
    { name: 'x402 receipt', version: '1', chainId: 1 },
    { name: 'Skill Market', version: '1', chainId: 84532 },
    { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
    { name: 'r', chainId: 1n },
    { name: 'r', chainId: '1n' },
    { name: 'r', chainId: 1 },
    { name: 'r', chainId: Number.NaN },
    { name: 'r', chainId: Number.POSITIVE_INFINITY },
    { name: 'r', chainId: null },
    { name: 'r', version: '' },
    { name: 'r', salt: `0x${'11'.repeat(32)}` },
    { name: 'r', salt: `0x${'11'.repeat(31)}` },
    { name: 'r', verifyingContract: '0x833589fcd6eDb6E08f4c7C32D4f71b54bdA02913' },
    { name: 'r', verifyingContract: () => 1 },
    Object.assign(Object.create({ chainId: 5 }), { name: 'r' }),
    {},
    null,
    '',
    0,
    false,
    undefined,
  ),
  fc.record({ name: fc.string(), version: fc.string(), chainId: fc.oneof(fc.integer(), fc.bigInt()) }),
);

/** Field names: words, and ones that could make two field lists read alike. */
const fieldNames = fc.oneof(
  fc.constantFrom('a', 'b', 'note', 'a,uint8 b', 'b c', '__proto__', 'constructor', 'é'),
  fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,4}$/),
);

/** Primary type names: words, and names viem reads only in part or not as own properties. */
const primaryTypes = fc.constantFrom('Flat', 'Flat', 'Flat', 'Flat-x', 'Flaté', 'Other', 'constructor', 'toString');

/** Extra struct types: none, a referenced one, ones named like atomic types, a stated domain type. */
const extraTypes = fc.constantFrom<Record<string, unknown>>(
  {},
  { Inner: [{ name: 'note', type: 'string' }] },
  { string: [{ name: 'z', type: 'uint8' }] },
  { uint256: [{ name: 'z', type: 'uint8' }] },
  { EIP712Domain: [{ name: 'name', type: 'string' }] },
  { Flat: [{ name: 'a', type: 'uint8' }] },
);

const typedData = fc
  .record({
    domain: domains,
    primaryType: primaryTypes,
    fields: fc.uniqueArray(fc.record({ name: fieldNames, type: fc.constantFrom(...fieldTypes) }), {
      minLength: 1,
      maxLength: 5,
      selector: (f) => f.name,
    }),
    extra: extraTypes,
    values: fc.array(anyValue, { minLength: 5, maxLength: 5 }),
    wellTyped: fc.boolean(),
  })
  .map(({ domain, primaryType, fields, extra, values, wellTyped }) => {
    const message: Record<string, unknown> = {};
    for (const [i, f] of fields.entries()) message[f.name] = wellTyped ? wellTypedValue(f.type, values[i]) : values[i];
    const types = primaryType === 'toString' ? extra : { ...extra, [primaryType]: fields };
    return { domain, types, primaryType, message } as unknown as Parameters<typeof hashTypedData>[0];
  });

describe('EIP-712 digests of flat structs agree with viem', () => {
  it('gives viem digest for every struct and value viem accepts, and refuses what viem refuses', () => {
    fc.assert(
      // Several in a row, each twice: later ones meet the separators and type hashes kept by earlier ones.
      fc.property(fc.array(typedData, { minLength: 1, maxLength: 4 }), (sequence) => {
        for (const typed of [...sequence, ...sequence]) expect(ourAnswer(typed)).to.equal(viemAnswer(typed));
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees with viem on sequences that once made a kept type hash or separator answer for another input', () => {
    const typed = (domain: unknown, types: unknown, primaryType: string, message: unknown) =>
      ({ domain, types, primaryType, message }) as unknown as Parameters<typeof hashTypedData>[0];
    const two = {
      Bar: [
        { name: 'a', type: 'uint8' },
        { name: 'b', type: 'uint8' },
      ],
    };
    const sequences = [
      // Field lists whose encoded types read alike.
      [
        typed({}, two, 'Bar', { a: 1, b: 2 }),
        typed({}, { Bar: [{ name: 'a,uint8 b', type: 'uint8' }] }, 'Bar', { a: 1, b: 2 }),
      ],
      [
        typed({}, { Bar: [{ name: 'a,uint8 b', type: 'uint8' }] }, 'Bar', { a: 1, b: 2, 'a,uint8 b': 3 }),
        typed({}, two, 'Bar', { a: 1, b: 2, 'a,uint8 b': 3 }),
      ],
      [
        typed({}, two, 'Bar', { a: 1, b: 2 }),
        typed({}, { Bar: [{ name: 'b', type: 'uint8 a,uint8' }] }, 'Bar', { a: 1, b: 2 }),
      ],
      // A primary type viem reads only up to its first non-word character.
      [
        typed({}, { Foo: [{ name: 'a', type: 'uint8' }], 'Foo-x': [{ name: 'b', type: 'uint8' }] }, 'Foo-x', {
          a: 1,
          b: 2,
        }),
      ],
      [typed({}, { 'constructor-x': [{ name: 'b', type: 'uint8' }] }, 'constructor-x', { b: 2 })],
      // A primary type that is not the types' own.
      [
        typed({ name: 'w', chainId: 1 }, { Foo: [{ name: 'a', type: 'uint8' }] }, 'Foo', { a: 1 }),
        typed({ name: 'w', chainId: 1 }, Object.create({ Foo: [{ name: 'a', type: 'uint8' }] }), 'Foo', { a: 1 }),
      ],
      // A kept domain beside types that name an atomic type.
      [
        typed({ name: 'w', chainId: 1 }, { Foo: [{ name: 'a', type: 'uint8' }] }, 'Foo', { a: 1 }),
        typed(
          { name: 'w', chainId: 1 },
          { Foo: [{ name: 'a', type: 'uint8' }], string: [{ name: 'z', type: 'uint8' }] },
          'Foo',
          { a: 1 },
        ),
      ],
      // Domains that serialise alike.
      [
        typed({ name: 'r2', chainId: null }, two, 'Bar', { a: 1, b: 2 }),
        typed({ name: 'r2', chainId: Number.NaN }, two, 'Bar', { a: 1, b: 2 }),
      ],
      [
        typed({ name: 'r', chainId: '1n' }, two, 'Bar', { a: 1, b: 2 }),
        typed({ name: 'r', chainId: 1n }, two, 'Bar', { a: 1, b: 2 }),
      ],
      [typed({}, two, 'Bar', { a: 1, b: 2 }), typed(Object.create({ chainId: 5 }), two, 'Bar', { a: 1, b: 2 })],
      // No domain at all.
      [
        typed(null, two, 'Bar', { a: 1, b: 2 }),
        typed(null, two, 'EIP712Domain', undefined),
        typed(undefined, undefined, 'EIP712Domain', undefined),
      ],
    ];
    for (const [i, sequence] of sequences.entries())
      for (const t of [...sequence, ...sequence]) expect(ourAnswer(t), `sequence ${i}`).to.equal(viemAnswer(t));
  });

  it('keeps nothing from a domain or a field list that reads differently each time', () => {
    let reads = 0;
    const fickleField = {
      type: 'uint256',
      get name() {
        reads += 1;
        return reads % 2 ? 'a' : 'b';
      },
    };
    const fickleDomain = {
      version: '1',
      chainId: 8453,
      get name() {
        reads += 1;
        return reads % 2 ? 'USD Coin' : 'Other';
      },
    };
    const plain = {
      domain: { name: 'USD Coin', version: '1', chainId: 8453 },
      types: {
        Fickle: [
          { name: 'a', type: 'uint256' },
          { name: 'b', type: 'uint256' },
        ],
      },
      primaryType: 'Fickle',
      message: { a: 1n, b: 2n },
    } as const;
    for (let round = 0; round < 3; round++) {
      ourAnswer({ ...plain, types: { Fickle: [fickleField, { name: 'b', type: 'uint256' }] } } as never);
      ourAnswer({ ...plain, domain: fickleDomain } as never);
      expect(ourAnswer(plain), `round ${round}`).to.equal(viemAnswer(plain));
    }
  });

  it('hashes the receipt, the purchase statement and an EIP-3009 authorization as viem does', () => {
    const receipt = {
      domain: { name: 'x402 receipt', version: '1', chainId: 1 },
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
      message: {
        version: 1n,
        network: 'eip155:84532',
        resourceUrl: 'https://market.example/api/posts/p1/skill?é=\u{1F600}',
        payer: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        issuedAt: 1_764_000_000n,
        transaction: `0x${'ab'.repeat(32)}`,
      },
    } as const;
    const authorization = {
      domain: {
        name: 'USDC',
        version: '2',
        chainId: 84532,
        verifyingContract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        from: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        to: '0x0000000000000000000000000000000000000001',
        value: 10_000n,
        validAfter: 0n,
        validBefore: 1_900_000_000n,
        nonce: `0x${'07'.repeat(32)}`,
      },
    } as const;
    const purchase = {
      ...purchaseTypedData(),
      message: { transaction: `0x${'cd'.repeat(32)}`, postId: 'p1', version: 3n, digest: `sha256:${'0'.repeat(64)}` },
    };
    for (const typed of [receipt, authorization, purchase] as Parameters<typeof hashTypedData>[0][]) {
      expect(typedDataHash(typed)).to.equal(hashTypedData(typed));
      expect(typedDataHash(typed)).to.equal(hashTypedData(typed));
    }
    // A struct type named like an atomic type is refused, as viem refuses it.
    const shadowed = { ...receipt, types: { ...receipt.types, string: [{ name: 'x', type: 'uint8' }] } };
    expect(viemAnswer(shadowed as never)).to.equal('refused');
    expect(ourAnswer(shadowed as never)).to.equal('refused');
  });

  it('computes Keccak-256 as viem does, for empty, one-block and many-block inputs given in parts', () => {
    for (const length of [0, 1, 135, 136, 137, 1000]) {
      const bytes = Uint8Array.from({ length }, (_, i) => (i * 31) & 0xff);
      expect(toHex(keccak256Bytes(bytes))).to.equal(keccak256(bytes));
      expect(toHex(keccak256Bytes(bytes.subarray(0, 7), bytes.subarray(7)))).to.equal(keccak256(bytes));
    }
  });
});

/** A value of the field's own JavaScript type, so most structs are ones viem accepts. */
function wellTypedValue(type: string, v: unknown): unknown {
  if (type === 'string') return typeof v === 'string' ? v : String(v);
  if (type === 'bool') return Boolean(v);
  if (type.startsWith('uint')) return typeof v === 'bigint' ? (v < 0n ? -v : v) % (1n << BigInt(type.slice(4))) : 7n;
  if (type === 'address') return typeof v === 'string' && v.length === 42 ? v.toLowerCase() : `0x${'12'.repeat(20)}`;
  if (type === 'bytes32') return typeof v === 'string' && v.length === 66 ? v : `0x${'34'.repeat(32)}`;
  if (type === 'Inner') return { note: String(v) };
  return v;
}
