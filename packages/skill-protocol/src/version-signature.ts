import { getAddress, recoverTypedDataAddress, type Address, type Hex } from 'viem';

/**
 * A seller's signature over one version of a skill: EIP-712 typed data its wallet signs when it
 * publishes the version, so a buyer (or the installer, offline) can check that the files it holds
 * are the ones the seller released. No chain id: it is a statement about content, not a
 * transaction, and holds whatever chain the marketplace settles on.
 */

export const SKILL_VERSION_DOMAIN = { name: 'Skill Market', version: '1' } as const;

export const SKILL_VERSION_TYPES = {
  SkillVersion: [
    { name: 'postId', type: 'string' },
    { name: 'version', type: 'uint256' },
    { name: 'name', type: 'string' },
    { name: 'digest', type: 'string' },
  ],
} as const;

/** What is signed: the skill (post id and Agent Skill name), the version number and its skill digest. */
export interface SkillVersionStatement {
  postId: string;
  version: number;
  name: string;
  /** `sha256:<hex>`, the skill digest (skill-digest.ts in this package). */
  digest: string;
}

/** The typed data a wallet signs (viem's `signTypedData` and `verifyTypedData` take it as is). */
export function versionTypedData(v: SkillVersionStatement) {
  return {
    domain: SKILL_VERSION_DOMAIN,
    types: SKILL_VERSION_TYPES,
    primaryType: 'SkillVersion' as const,
    message: { postId: v.postId, version: BigInt(v.version), name: v.name, digest: v.digest },
  };
}

/**
 * Whether `signature` is `signer`'s (an EOA) over the statement. Smart-contract wallets verify
 * on chain instead (viem's `publicClient.verifyTypedData`); this check needs no network.
 */
export async function isVersionSignedBy(signer: Address, v: SkillVersionStatement, signature: Hex): Promise<boolean> {
  try {
    const recovered = await recoverTypedDataAddress({ ...versionTypedData(v), signature });
    return getAddress(recovered) === getAddress(signer);
  } catch {
    return false;
  }
}
