import { createRequire } from 'node:module';
import { IDENTITY_REGISTRY_ABI } from '@skill-market/skill-protocol/identity-registry-abi';
import type { Abi, Address, Hex } from 'viem';
import { deployBytecode, type ChainContext } from './clients.js';

interface Artifact {
  abi: Abi;
  bytecode: Hex;
}

// Compiled by scripts/compile-contracts.ts from contracts/IdentityRegistry.sol and committed,
// so nothing compiles at run time.
const artifact = createRequire(import.meta.url)('./artifacts/IdentityRegistry.json') as Artifact;

/**
 * ABI of our minimal ERC-8004 IdentityRegistry: the one declaration the service and the CLI share
 * (@skill-market/skill-protocol), checked against this artifact by a test. It is a subset of the
 * official data/erc8004/IdentityRegistry.abi.json (everything except the UUPS upgrade surface), so
 * code written against either ABI works on both. Widened to `Abi` here, where calls name their
 * functions at run time.
 */
export const identityRegistryAbi: Abi = IDENTITY_REGISTRY_ABI;

/**
 * Deploys our ERC-8004 IdentityRegistry (contracts/IdentityRegistry.sol) from the wallet's
 * account, which becomes the registry's `owner()`. Agent ids start at 0, as on the real registries.
 */
export async function deployIdentityRegistry(ctx: ChainContext): Promise<Address> {
  return deployBytecode(ctx, 'IdentityRegistry', artifact.abi, artifact.bytecode);
}
