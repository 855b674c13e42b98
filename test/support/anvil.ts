import { createTestClient, http } from 'viem';
import { localChain } from '../../src/platform/chain/clients.js';
import type { ChainHandle } from '../../src/platform/blockchain.js';

/** anvil's test actions (balances for gas, code planting) on the embedded chain. */
export const testClient = (c: ChainHandle) =>
  createTestClient({ mode: 'anvil', chain: localChain(c.chainId, c.rpcUrl), transport: http(c.rpcUrl) });
