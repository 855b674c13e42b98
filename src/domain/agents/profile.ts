import { z } from 'zod';
import type { Db } from '../../data/db.js';
import type { Agent, AgentUpdate } from '../../data/schema.js';
import { isAddress, isAddressEqual, type Address, type PublicClient } from 'viem';
import { AppError, NotFoundError } from '../../platform/errors.js';
import { identityRegistryAbi } from '../../platform/chain/identity-registry.js';
import { HttpsUrl, InstallManifest, oasfList } from '../shared-schemas.js';
import { lockAgent, saveAgentChanges } from '../../data/agents.repository.js';
import { insertEvent } from '../../data/events.repository.js';

/**
 * What an agent may edit about itself. Every field is optional; null clears it; unknown fields
 * are refused. These are the fields the best-practices checklist and the score read.
 */
export const ProfilePatch = z
  .object({
    displayName: z.string().trim().min(1).max(80).nullable(),
    bio: z.string().trim().max(2000).nullable().describe('30+ characters count towards the profile-basics check'),
    avatarUrl: HttpsUrl.nullable(),
    websiteUrl: HttpsUrl.nullable(),
    contactEmail: z.email('must be an e-mail address').max(254).nullable(),
    contactUrl: HttpsUrl.nullable().describe('a social or contact link'),
    docsUrl: HttpsUrl.nullable().describe('public documentation'),
    capabilities: z
      .object({ mcp: HttpsUrl.nullable(), a2a: HttpsUrl.nullable(), x402: HttpsUrl.nullable() })
      .partial()
      .strict()
      .describe('declared endpoints; null removes one'),
    oasfSkills: oasfList('skills'),
    oasfDomains: oasfList('domains'),
    installManifest: InstallManifest.nullable(),
    erc8004AgentId: z
      .string()
      .regex(/^\d{1,78}$/, 'must be the decimal ERC-8004 agent (token) id')
      .nullable()
      .describe('your ERC-8004 IdentityRegistry token; it must be owned by your wallet (checked on chain)'),
  })
  .partial()
  .strict()
  .refine((p) => Object.keys(p).length > 0, 'give at least one field to change');
export type ProfilePatch = z.infer<typeof ProfilePatch>;

/**
 * A token id is accepted only when the registry says the agent's wallet owns it. Read before the
 * profile transaction opens (no transaction spans a network call).
 */
export async function assertTokenOwned(
  client: PublicClient,
  registry: Address,
  tokenId: string,
  wallet: string,
): Promise<void> {
  const owner = await client
    .readContract({ address: registry, abi: identityRegistryAbi, functionName: 'ownerOf', args: [BigInt(tokenId)] })
    .catch(() => null);
  if (typeof owner !== 'string' || !isAddress(owner, { strict: false }))
    throw new AppError(
      422,
      'token_not_found',
      `ERC-8004 agent ${tokenId} does not exist in the IdentityRegistry ${registry}`,
    );
  if (!isAddressEqual(owner, wallet as Address)) {
    throw new AppError(
      422,
      'token_not_owned',
      `ERC-8004 agent ${tokenId} is owned by ${owner}, not by this agent's wallet ${wallet}`,
    );
  }
}

/** Applies a validated patch in one transaction with its domain event; returns the updated agent. */
export async function updateProfile(db: Db, agentId: string, patch: ProfilePatch): Promise<Agent> {
  return db.transaction().execute(async (trx) => {
    const current = await lockAgent(trx, agentId);
    if (!current) throw new NotFoundError('The agent of this token', 'agent_not_found');
    const updated = await saveAgentChanges(trx, agentId, profileChanges(current, patch), new Date());
    await insertEvent(trx, 'agent.profile_updated', { agentId, payload: { fields: Object.keys(patch) } });
    return updated;
  });
}

/**
 * The columns a patch changes: each field given is set (null clears it); declared capabilities
 * are merged into the agent's current ones, a null removing one.
 */
export function profileChanges(current: Pick<Agent, 'capabilities'>, patch: ProfilePatch): AgentUpdate {
  const set: AgentUpdate = {};
  if (patch.displayName !== undefined) set.display_name = patch.displayName;
  if (patch.bio !== undefined) set.bio = patch.bio;
  if (patch.avatarUrl !== undefined) set.avatar_url = patch.avatarUrl;
  if (patch.websiteUrl !== undefined) set.website_url = patch.websiteUrl;
  if (patch.contactEmail !== undefined) set.contact_email = patch.contactEmail;
  if (patch.contactUrl !== undefined) set.contact_url = patch.contactUrl;
  if (patch.docsUrl !== undefined) set.docs_url = patch.docsUrl;
  if (patch.oasfSkills !== undefined) set.oasf_skills = patch.oasfSkills;
  if (patch.oasfDomains !== undefined) set.oasf_domains = patch.oasfDomains;
  if (patch.erc8004AgentId !== undefined) set.token_id = patch.erc8004AgentId;
  if (patch.installManifest !== undefined)
    set.install_manifest = patch.installManifest === null ? null : JSON.stringify(patch.installManifest);
  if (patch.capabilities !== undefined) {
    const merged: Record<string, string> = { ...current.capabilities };
    for (const [k, v] of Object.entries(patch.capabilities)) {
      if (v === null) delete merged[k];
      else if (v !== undefined) merged[k] = v;
    }
    set.capabilities = JSON.stringify(merged);
  }
  return set;
}
