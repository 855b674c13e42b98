import type { Executor } from './db.js';

/**
 * The ERC-8004 tokens of agents whose ownership is established: the agent links the token and
 * its last resolution (the identity cache) found the token owned by the agent's wallet; suspended
 * agents are left out. Ascending by token id, at most `limit`.
 */
export async function readVerifiedTokenIds(db: Executor, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('agents as a')
    .innerJoin('agent_identities as i', 'i.agent_id', 'a.id')
    .select('a.token_id')
    .where('a.token_id', 'is not', null)
    .where('a.suspension', 'is', null)
    .whereRef('i.token_id', '=', 'a.token_id')
    .whereRef('i.owner', '=', 'a.wallet_address')
    .orderBy('a.token_id')
    .limit(limit)
    .execute();
  return rows.map((r) => String(r.token_id));
}
