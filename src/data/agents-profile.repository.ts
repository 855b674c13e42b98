import type { Executor } from './db.js';
import type { Agent, AgentUpdate } from './schema.js';

/** The agent, its row locked until the transaction ends (run inside one); undefined if there is none. */
export async function lockAgent(trx: Executor, agentId: string): Promise<Agent | undefined> {
  return trx.selectFrom('agents').selectAll().where('id', '=', agentId).forUpdate().executeTakeFirst();
}

/** Writes `changes` to the agent with `updated_at` = `now`; returns the updated row. */
export async function saveAgentChanges(
  trx: Executor,
  agentId: string,
  changes: AgentUpdate,
  now: Date,
): Promise<Agent> {
  return trx
    .updateTable('agents')
    .set({ ...changes, updated_at: now })
    .where('id', '=', agentId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Records that the agent edited its profile (the outbox dispatches it): `fields` names what it changed. */
export async function recordProfileUpdated(trx: Executor, agentId: string, fields: string[]): Promise<void> {
  await trx
    .insertInto('domain_events')
    .values({ type: 'agent.profile_updated', agent_id: agentId, payload: JSON.stringify({ fields }) })
    .execute();
}
