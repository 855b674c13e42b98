import type { Selectable } from 'kysely';
import { getAddress } from 'viem';
import type { PostVersionsTable } from '../../data/schema.js';
import type { VersionIntegrity } from '../../documents/post.renderer.js';
import { versionTypedData } from '@skill-market/skill-protocol/version-signature';

/**
 * A stored version's integrity, as the full view, the manifest and a purchase state it: the
 * Agent Skill name, the digests stored when it was published, and the seller's signature with
 * the EIP-712 typed data it signed (`message.version` as a decimal string, so it survives JSON),
 * or null while the seller has not signed it. Anyone can check it offline: recompute the digests
 * from the files (skill-digest.ts) and recover the signer from the typed data; the signer must be
 * the seller wallet the post names (`author.walletAddress`).
 */
export function versionIntegrity(postId: string, v: Selectable<PostVersionsTable>): VersionIntegrity {
  const typed = versionTypedData({ postId, version: v.version, name: v.skill_name, digest: v.skill_digest });
  return {
    name: v.skill_name,
    version: v.version,
    versionLabel: v.version_label,
    skillDigest: v.skill_digest,
    files: v.file_digests.map((f) => ({ path: f.path, digest: f.digest })),
    signature:
      v.signer && v.signature
        ? {
            signer: getAddress(v.signer),
            value: v.signature,
            scheme: 'eip712',
            typedData: {
              domain: typed.domain,
              types: typed.types,
              primaryType: typed.primaryType,
              message: { ...typed.message, version: String(v.version) },
            },
          }
        : null,
  };
}
