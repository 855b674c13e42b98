/**
 * CPU per EIP-712 operation the service does most: a receipt's digest and signature (the paid
 * answer, a reputation mirror's sales) and an EIP-3009 authorization's digest and signer (the paid
 * path's check). viem's `hashTypedData` and `keccak256` against the service's own
 * (`typedDataHash`: a kept domain separator and type hash, Keccak-256 in WebAssembly), alternating
 * in rounds in one process.
 *
 *   npx tsx bench/eip712.ts [--operations 20000] [--rounds 3]
 */
import { parseArgs } from 'node:util';
import { hashTypedData, keccak256, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { authorizationTypes } from '@x402/evm';
import { RECEIPT_TYPES } from '@x402/extensions/offer-receipt';
import { keccak256Bytes } from '../src/platform/keccak.js';
import { recoverHashSigner, signHash, typedDataHash } from '../src/platform/secp256k1.js';
import { printRunInfo } from './support/run-info.js';

printRunInfo();
const { values } = parseArgs({
  options: { operations: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '3' } },
});
const n = Number(values.operations);
const key = generatePrivateKey();
const payer = privateKeyToAccount(generatePrivateKey()).address;

const receipt = (i: number) => ({
  domain: { name: 'x402 receipt', version: '1', chainId: 1 },
  types: RECEIPT_TYPES,
  primaryType: 'Receipt' as const,
  message: {
    version: 1n,
    network: 'eip155:84532',
    resourceUrl: `https://market.example/api/posts/${i}/skill`,
    payer,
    issuedAt: BigInt(1_764_000_000 + i),
    transaction: `0x${i.toString(16).padStart(64, '0')}`,
  },
});
const authorization = (i: number) => ({
  domain: {
    name: 'USDC',
    version: '2',
    chainId: 84532,
    verifyingContract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' as const,
  },
  types: authorizationTypes,
  primaryType: 'TransferWithAuthorization' as const,
  message: {
    from: payer,
    to: '0x0000000000000000000000000000000000000001' as const,
    value: BigInt(10_000 + i),
    validAfter: 0n,
    validBefore: 1_900_000_000n,
    nonce: `0x${i.toString(16).padStart(64, '0')}` as Hex,
  },
});

const receipts = Array.from({ length: n }, (_, i) => receipt(i));
const authorizations = Array.from({ length: n }, (_, i) => authorization(i));
const digests = receipts.map((r) => typedDataHash(r));
const signatures = digests.map((d) => signHash(d, key));
const block = new Uint8Array(200);

/** Microseconds per call of `f` over the n operations. */
const perOperation = (f: (i: number) => unknown) => {
  const started = performance.now();
  for (let i = 0; i < n; i++) f(i);
  return ((performance.now() - started) * 1000) / n;
};

const cases: Array<[string, (i: number) => unknown]> = [
  ['keccak-256 of 200 bytes, viem (JavaScript)', () => keccak256(block, 'bytes')],
  ['keccak-256 of 200 bytes, WebAssembly', () => keccak256Bytes(block)],
  ['receipt digest, viem hashTypedData', (i) => hashTypedData(receipts[i]!)],
  ['receipt digest, typedDataHash', (i) => typedDataHash(receipts[i]!)],
  ['authorization digest, viem hashTypedData', (i) => hashTypedData(authorizations[i]!)],
  ['authorization digest, typedDataHash', (i) => typedDataHash(authorizations[i]!)],
  ['receipt signature (libsecp256k1 in WebAssembly)', (i) => signHash(digests[i]!, key)],
  ['signer recovered (libsecp256k1 in WebAssembly)', (i) => recoverHashSigner(digests[i]!, signatures[i]!)],
];
const results = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let round = 0; round < Number(values.rounds); round++) {
  for (const [name, f] of cases) results.get(name)!.push(perOperation(f));
}
console.log(`${n} operations a case, ${values.rounds} rounds; µs per operation (best round, all rounds)`);
for (const [name, times] of results) {
  console.log(`  ${name}: ${Math.min(...times).toFixed(1)} (${times.map((t) => t.toFixed(1)).join(', ')})`);
}
