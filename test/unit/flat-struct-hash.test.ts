import { expect } from 'chai';
import fc from 'fast-check';
import { hashTypedData, keccak256, toHex, type Hex } from 'viem';
import { typedDataHash } from '../../src/platform/secp256k1.js';
import { keccak256Bytes } from '../../src/platform/keccak.js';

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

const domains = fc.constantFrom(
  { name: 'x402 receipt', version: '1', chainId: 1 },
  { name: 'Skill Market', version: '1', chainId: 84532 },
  { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
  {},
);

describe('EIP-712 digests of flat structs agree with viem', () => {
  it('gives viem digest for every struct and value viem accepts, and refuses what viem refuses', () => {
    fc.assert(
      fc.property(
        domains,
        fc.uniqueArray(
          fc.record({ name: fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,8}$/), type: fc.constantFrom(...fieldTypes) }),
          {
            minLength: 1,
            maxLength: 7,
            selector: (f) => f.name,
          },
        ),
        fc.array(anyValue, { minLength: 7, maxLength: 7 }),
        fc.boolean(),
        (domain, fields, values, wellTyped) => {
          const message: Record<string, unknown> = {};
          for (const [i, f] of fields.entries())
            message[f.name] = wellTyped ? wellTypedValue(f.type, values[i]) : values[i];
          const typed = {
            domain,
            types: { Flat: fields, Inner: [{ name: 'note', type: 'string' }] },
            primaryType: 'Flat',
            message,
          } as unknown as Parameters<typeof hashTypedData>[0];
          // Twice: the second answer comes from the kept separator and type hash.
          expect(ourAnswer(typed)).to.equal(viemAnswer(typed));
          expect(ourAnswer(typed)).to.equal(viemAnswer(typed));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('hashes the receipt, the purchase statement and an EIP-3009 authorization as viem does', () => {
    const receipt = {
      domain: { name: 'x402 receipt', version: '1', chainId: 1 },
      types: {
        Receipt: [
          { name: 'version', type: 'uint256' },
          { name: 'network', type: 'string' },
          { name: 'resourceUrl', type: 'string' },
          { name: 'payer', type: 'string' },
          { name: 'issuedAt', type: 'uint256' },
          { name: 'transaction', type: 'string' },
        ],
      },
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
      types: {
        TransferWithAuthorization: [
          { name: 'from', type: 'address' },
          { name: 'to', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'validAfter', type: 'uint256' },
          { name: 'validBefore', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
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
    for (const typed of [receipt, authorization] as Parameters<typeof hashTypedData>[0][]) {
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
