import { createKeccak } from 'hash-wasm';

/**
 * Keccak-256 through WebAssembly (`hash-wasm`): about ten times faster than the pure-JavaScript
 * Keccak viem uses, and an EIP-712 digest is eight of them (docs/benchmarks.md). One hasher per
 * process; each call runs init, update and digest without yielding, so calls never interleave.
 */
const hasher = await createKeccak(256);

/** Keccak-256 of the bytes given, concatenated. */
export function keccak256Bytes(...parts: Uint8Array[]): Uint8Array {
  hasher.init();
  for (const part of parts) hasher.update(part);
  return hasher.digest('binary');
}
