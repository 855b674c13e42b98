import type { Address } from 'viem';
import { readVerifiedTokenIds } from '../../data/agent-registrations.repository.js';
import type { Db } from '../../data/db.js';

/** How many registrations the file lists at most (about 100 bytes each). */
export const DOMAIN_REGISTRATIONS_LIMIT = 10_000;

export interface DomainRegistrations {
  registrations: Array<{ agentId: number | string; agentRegistry: string }>;
}

/**
 * `/.well-known/agent-registration.json` of the marketplace's domain: ERC-8004's endpoint-domain
 * proof ("Endpoint Domain Verification"). The registration files the marketplace suggests point
 * their services (web page, A2A AgentCard, MCP server) at this domain, so an explorer checking
 * an agent's endpoint domain looks here for a `registrations` entry with the agent's
 * `agentRegistry` and `agentId`. It lists the tokens of the agents whose ownership is established
 * (linked, and owned by the agent's wallet at the last resolution): the marketplace vouches only
 * for agents it serves and whose token their wallet holds, so linking someone else's token never
 * gets it listed.
 */
export async function domainRegistrations(
  db: Db,
  chain: { chainId: number; identityRegistry: Address },
): Promise<DomainRegistrations> {
  const agentRegistry = `eip155:${chain.chainId}:${chain.identityRegistry}`;
  const ids = await readVerifiedTokenIds(db, DOMAIN_REGISTRATIONS_LIMIT);
  return {
    registrations: ids.map((id) => ({
      // A JSON number where it is exact, as the specification's example writes it.
      agentId: /^[0-9]{1,15}$/.test(id) ? Number(id) : id,
      agentRegistry,
    })),
  };
}
