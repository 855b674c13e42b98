import { createRequire } from 'node:module';
import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import type { Abi, Address, Hex } from 'viem';
import { deployBytecode, type ChainContext } from './clients.js';

interface Artifact {
  abi: Abi;
  bytecode: Hex;
}

// Compiled by scripts/compile-contracts.ts from contracts/ReputationRegistry.sol and committed,
// so nothing compiles at run time.
const artifact = createRequire(import.meta.url)('./artifacts/ReputationRegistry.json') as Artifact;

/**
 * ABI of our minimal ERC-8004 ReputationRegistry: the one declaration the service and the CLI share
 * (@skill-market/skill-protocol), checked against this artifact by a test. It is a subset of the
 * official data/erc8004/ReputationRegistry.abi.json (everything except the UUPS upgrade surface),
 * so code written against either ABI works on both. Widened to `Abi` here, where calls name their
 * functions at run time.
 */
export const reputationRegistryAbi: Abi = REPUTATION_REGISTRY_ABI;

/**
 * Deploys our ERC-8004 ReputationRegistry (contracts/ReputationRegistry.sol) bound to
 * `identityRegistry`, whose agents it takes feedback for, from the wallet's account, which becomes
 * the registry's `owner()`.
 */
export async function deployReputationRegistry(ctx: ChainContext, identityRegistry: Address): Promise<Address> {
  return deployBytecode(ctx, 'ReputationRegistry', artifact.abi, artifact.bytecode, [identityRegistry]);
}
