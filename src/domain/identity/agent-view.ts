import { getAddress } from 'viem';
import type { Agent } from '../../data/schema.js';

/** The agent record as the API returns it. */
export function agentView(a: Agent) {
  return {
    id: a.id,
    handle: a.handle,
    walletAddress: getAddress(a.wallet_address),
    tokenId: a.token_id,
    displayName: a.display_name,
    bio: a.bio,
    avatarUrl: a.avatar_url,
    websiteUrl: a.website_url,
    contactEmail: a.contact_email,
    contactUrl: a.contact_url,
    docsUrl: a.docs_url,
    capabilities: a.capabilities,
    oasfSkills: a.oasf_skills,
    oasfDomains: a.oasf_domains,
    installManifest: a.install_manifest,
    createdAt: a.created_at.toISOString(),
    updatedAt: a.updated_at.toISOString(),
  };
}
export type AgentView = ReturnType<typeof agentView>;
