import { createRequire } from 'node:module';
import { createTestClient, http, type Abi, type Hex } from 'viem';
import { MULTICALL3_ADDRESS } from './clients.js';

// Runtime code vendored from viem by scripts/compile-contracts.ts (see writeMulticall3 there).
const artifact = createRequire(import.meta.url)('./artifacts/Multicall3.json') as { abi: Abi; deployedBytecode: Hex };

/** Multicall3's full ABI (viem's own `multicall3Abi` lacks tryAggregate and friends). */
export const multicall3Abi: Abi = artifact.abi;

/**
 * Puts Multicall3's runtime code at its canonical address on an anvil node (`anvil_setCode`).
 * The x402 v2 facilitator reads balances and nonce state through it (`tryAggregate`) to explain
 * failed payments, and viem's `multicall` uses it too. No transaction: no nonce or block is used.
 */
export async function plantMulticall3(rpcUrl: string): Promise<void> {
  const testClient = createTestClient({ mode: 'anvil', transport: http(rpcUrl) });
  await testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: artifact.deployedBytecode });
}
