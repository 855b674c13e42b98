import type { Address, PublicClient } from 'viem';
import { findCachedIdentities, saveCachedIdentity, type CachedIdentity } from '../../data/agents.repository.js';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import { mapBounded } from '../../platform/bounded-map.js';
import { checksummed } from '../../platform/chain/checksum.js';
import { resolveIdentity, type Resolution } from '../identity/erc8004.js';

const IDENTITY_TTL_MS = 10 * 60_000;
const IDENTITY_READS_IN_FLIGHT = 8;

export interface IdentityDeps {
  db: Db;
  chain: { chainId: number; identityRegistry: Address; publicClient: PublicClient };
}

/** A cached resolution, fresh enough and for the token the agent links now; else undefined. */
export function cachedResolution(
  row: CachedIdentity | undefined,
  agent: Agent,
  chain: IdentityDeps['chain'],
  now: Date,
): Resolution | undefined {
  if (!row || row.token_id !== agent.token_id || now.getTime() - row.resolved_at.getTime() >= IDENTITY_TTL_MS)
    return undefined;
  return {
    tokenId: row.token_id,
    registry: `eip155:${chain.chainId}:${chain.identityRegistry}`,
    owner: row.owner ? checksummed(row.owner) : null,
    agentWallet: row.agent_wallet ? checksummed(row.agent_wallet) : null,
    tokenUri: row.token_uri,
    registration: row.registration,
    registrationErrors: row.registration_errors,
    resolvedAt: row.resolved_at.toISOString(),
  };
}

/**
 * The ERC-8004 resolutions of the agents' tokens (null for an agent without one): from the cache
 * (one read for all), each stale one or one for another token read again from the chain and the
 * cache rewritten. Writes: never call it from a request.
 */
export async function refreshIdentities(
  deps: IdentityDeps,
  agents: Agent[],
  now: Date,
): Promise<Map<string, Resolution | null>> {
  const out = new Map<string, Resolution | null>(agents.map((a) => [a.id, null]));
  const withToken = agents.flatMap((a) => (a.token_id ? [{ agent: a, tokenId: a.token_id }] : []));
  if (!withToken.length) return out;
  const cached = await findCachedIdentities(
    deps.db,
    withToken.map((a) => a.agent.id),
  );
  // Stale ones are read from the chain a few at a time (a page of a full recompute after the TTL
  // can hold a hundred), not one after another.
  await mapBounded(withToken, IDENTITY_READS_IN_FLIGHT, async ({ agent, tokenId }) => {
    const hit = cachedResolution(cached.get(agent.id), agent, deps.chain, now);
    if (hit) {
      out.set(agent.id, hit);
      return;
    }
    const r = await resolveIdentity(deps.chain.publicClient, deps.chain.identityRegistry, deps.chain.chainId, tokenId);
    await saveCachedIdentity(deps.db, agent.id, {
      token_id: r.tokenId,
      owner: r.owner?.toLowerCase() ?? null,
      agent_wallet: r.agentWallet?.toLowerCase() ?? null,
      token_uri: r.tokenUri,
      registration: r.registration ? JSON.stringify(r.registration) : null,
      registration_errors: r.registrationErrors,
      resolved_at: new Date(r.resolvedAt),
    });
    out.set(agent.id, r);
  });
  return out;
}
