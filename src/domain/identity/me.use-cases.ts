import type { Address, PublicClient } from 'viem';
import type { Db } from '../../data/db.js';
import { findAgentById } from '../../data/agents.repository.js';
import { NotFoundError } from '../../platform/errors.js';
import { assertTokenOwned, type ProfilePatch, updateProfile } from '../agents/profile.js';
import { agentView, type AgentView } from './agent-view.js';
import type { AgentClaims } from './jwt.js';

/** The signed-in agent's record; 404 when the agent of a valid token no longer exists. */
export async function readOwnAgent(db: Db, agentId: string): Promise<AgentView> {
  const agent = await findAgentById(db, agentId);
  if (!agent) throw new NotFoundError('The agent of this token', 'agent_not_found');
  return agentView(agent);
}

/**
 * Edits the signed-in agent's profile. An ERC-8004 token it names must exist and be owned by
 * its wallet (checked on the chain before anything is written).
 */
export async function editOwnProfile(
  deps: { db: Db; chain: { publicClient: PublicClient; identityRegistry: Address } },
  claims: AgentClaims,
  patch: ProfilePatch,
): Promise<AgentView> {
  if (patch.erc8004AgentId)
    await assertTokenOwned(deps.chain.publicClient, deps.chain.identityRegistry, patch.erc8004AgentId, claims.wallet);
  return agentView(await updateProfile(deps.db, claims.sub, patch));
}
