import { getAddress, type Address, type Hex, type PublicClient } from 'viem';
import { AppError } from '../../platform/errors.js';
import {
  isVersionSignedBy,
  versionTypedData,
  type SkillVersionStatement,
} from '@skill-market/skill-protocol/version-signature';

/** 422: the signature is not the seller wallet's over this version's statement. */
export class VersionSignatureInvalidError extends AppError {
  constructor(statement: SkillVersionStatement, seller: Address) {
    super(
      422,
      'version_signature_invalid',
      `versionSignature must be the EIP-712 SkillVersion{postId: ${statement.postId}, version: ${statement.version}, ` +
        `name: ${statement.name}, digest: ${statement.digest}} (domain Skill Market, version 1) signed by the seller wallet ${seller}`,
      { expected: { signer: seller, ...statement } },
    );
  }
}

/**
 * Checks a seller's signature over a version: recovered offline for a plain wallet, asked of the
 * chain (ERC-1271, or ERC-6492 for a wallet not deployed yet) otherwise. Returns what to store;
 * 422 `version_signature_invalid` when the signature is anyone else's or over other content.
 */
export async function checkedVersionSignature(
  publicClient: PublicClient | undefined,
  seller: string,
  statement: SkillVersionStatement,
  signature: Hex,
  at: Date,
): Promise<{ signer: string; signature: string; at: Date }> {
  const wallet = getAddress(seller);
  let valid = await isVersionSignedBy(wallet, statement, signature);
  if (!valid && publicClient)
    valid = await publicClient
      .verifyTypedData({ address: wallet, ...versionTypedData(statement), signature })
      .catch(() => false);
  if (!valid) throw new VersionSignatureInvalidError(statement, wallet);
  return { signer: wallet, signature, at };
}
