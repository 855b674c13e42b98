import { verifyMessage, type Address, type Hex, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { devAccountKey } from '../../platform/chain/dev-accounts.js';
import { AppError } from '../../platform/errors.js';

/**
 * Ownership proofs as x402 crawlers (x402scan) read them: the origin of the service (scheme, host
 * and port, no trailing slash) signed with personal_sign (EIP-191) by a key that receives its
 * payments. They let a crawler tell a resource's real operator from a copy pointing elsewhere.
 */
export const proofOrigin = (baseUrl: string) => new URL(baseUrl).origin;

export class OwnershipProofError extends AppError {
  constructor(origin: string) {
    super(
      422,
      'ownership_proof_invalid',
      `ownershipProof must be the origin "${origin}" signed (personal_sign) by your agent's wallet`,
    );
  }
}

/**
 * Whether `signature` is `origin` signed by `address`: recovered locally for a plain wallet, and
 * asked of the chain (ERC-1271, or ERC-6492 for a wallet not deployed yet) otherwise.
 */
export async function provesOwnership(
  publicClient: PublicClient,
  address: Address,
  origin: string,
  signature: Hex,
): Promise<boolean> {
  const local = await verifyMessage({ address, message: origin, signature }).catch(() => false);
  if (local) return true;
  return publicClient.verifyMessage({ address, message: origin, signature }).catch(() => false);
}

/** A seller's proof of our origin, checked against its wallet; 422 `ownership_proof_invalid` otherwise. */
export async function checkedSellerProof(
  deps: { baseUrl: string; publicClient: PublicClient },
  wallet: Address,
  signature: Hex,
): Promise<{ origin: string; signature: Hex }> {
  const origin = proofOrigin(deps.baseUrl);
  if (!(await provesOwnership(deps.publicClient, wallet, origin, signature))) throw new OwnershipProofError(origin);
  return { origin, signature };
}

export interface TreasuryProofDeps {
  baseUrl: string;
  chain: { embedded: boolean; treasury: Address; publicClient: PublicClient };
  /** TREASURY_OWNERSHIP_PROOF, when the operator signed the origin with the treasury key. */
  configured: Hex | undefined;
}

/**
 * The treasury's proof of our origin, looked up once: the configured one if it verifies, or on
 * the embedded dev chain (whose treasury key is a public anvil key) one signed here. Undefined
 * when neither exists: registration is then listed without a proof.
 */
export function treasuryProofSource(deps: TreasuryProofDeps): () => Promise<Hex | undefined> {
  let proof: Promise<Hex | undefined> | undefined;
  return () => {
    proof ??= treasuryProof(deps);
    return proof;
  };
}

async function treasuryProof(deps: TreasuryProofDeps): Promise<Hex | undefined> {
  const origin = proofOrigin(deps.baseUrl);
  if (deps.configured)
    return (await provesOwnership(deps.chain.publicClient, deps.chain.treasury, origin, deps.configured))
      ? deps.configured
      : undefined;
  const key = deps.chain.embedded ? devAccountKey(deps.chain.treasury) : undefined;
  return key ? privateKeyToAccount(key).signMessage({ message: origin }) : undefined;
}
