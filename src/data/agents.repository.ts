import { sql, type Selectable } from 'kysely';
import { z } from 'zod';
import { StoredManifest } from './column-types.js';
import type { Executor } from './db.js';
import { insertEvent } from './events.repository.js';
import type { Agent, AgentIdentitiesTable, AgentUpdate } from './schema.js';

/**
 * The JSON columns of an agent, checked as they are read (they were validated when written).
 * Unknown capability keys are kept, as they are stored.
 */
const StoredCapabilities = z.looseObject({
  mcp: z.string().optional(),
  a2a: z.string().optional(),
  x402: z.string().optional(),
});

function parseAgent(row: Agent): Agent {
  return {
    ...row,
    capabilities: StoredCapabilities.parse(row.capabilities),
    install_manifest: StoredManifest.parse(row.install_manifest),
  };
}

const parsed = (row: Agent | undefined) => (row ? parseAgent(row) : undefined);

/** The agent of a wallet (any case), if it has registered. */
export async function findAgentByWallet(db: Executor, wallet: string): Promise<Agent | undefined> {
  return parsed(
    await db.selectFrom('agents').selectAll().where('wallet_address', '=', wallet.toLowerCase()).executeTakeFirst(),
  );
}

/** The agent holding a handle, if any. */
export async function findAgentByHandle(db: Executor, handle: string): Promise<Agent | undefined> {
  return parsed(await db.selectFrom('agents').selectAll().where('handle', '=', handle).executeTakeFirst());
}

/** An agent by id, if it exists. */
export async function findAgentById(db: Executor, id: string): Promise<Agent | undefined> {
  return parsed(await db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst());
}

/** The agents that already hold a handle or a wallet, with the payment that registered each. */
export function findAgentsHoldingHandleOrWallet(db: Executor, handle: string, wallet: string) {
  return db
    .selectFrom('agents')
    .select(['handle', 'wallet_address', 'registration_payment_id'])
    .where((eb) => eb.or([eb('handle', '=', handle), eb('wallet_address', '=', wallet.toLowerCase())]))
    .execute();
}

/** Inserts the agent a settled registration paid for, and its `agent.registered` event; returns its id. */
export async function insertRegisteredAgent(
  trx: Executor,
  registration: { handle: string; wallet: string; paymentId: string },
): Promise<string> {
  const agent = await trx
    .insertInto('agents')
    .values({
      handle: registration.handle,
      wallet_address: registration.wallet,
      registration_payment_id: registration.paymentId,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await insertEvent(trx, 'agent.registered', { agentId: agent.id, payload: { paymentId: registration.paymentId } });
  return agent.id;
}

/** The agents with these ids, in id order. */
export async function findAgentsByIds(db: Executor, ids: string[]): Promise<Agent[]> {
  if (!ids.length) return [];
  return db.selectFrom('agents').selectAll().where('id', 'in', ids).orderBy('id').execute();
}

/** The agent with this handle (handles are stored lower-case). */
export async function findAgentByHandleAnyCase(db: Executor, handle: string): Promise<Agent | undefined> {
  return db.selectFrom('agents').selectAll().where('handle', '=', handle.toLowerCase()).executeTakeFirst();
}

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

/**
 * Up to `limit` agent ids after `after` (all agents from the first when null), ascending: the full
 * recompute walks the agents in such chunks, so it never holds every id at once.
 */
export async function readAgentIdsAfter(db: Executor, after: string | null, limit: number): Promise<string[]> {
  let query = db.selectFrom('agents').select('id');
  if (after !== null) query = query.where('id', '>', after);
  const rows = await query.orderBy('id').limit(limit).execute();
  return rows.map((r) => r.id);
}

/** The handles of the agents among `ids` that exist (agents deleted since are left out). */
export async function readHandles(db: Executor, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await db
    .selectFrom('agents')
    .select(['id', 'handle'])
    .where(sql<boolean>`id = ANY(${ids}::uuid[])`)
    .execute();
  return new Map(rows.map((a) => [a.id, a.handle]));
}

export type CachedIdentity = Selectable<AgentIdentitiesTable>;

/** An identity resolution as the cache stores it (addresses lower-cased, the file as JSON text). */
export interface IdentityRow {
  token_id: string;
  owner: string | null;
  agent_wallet: string | null;
  token_uri: string | null;
  registration: string | null;
  registration_errors: string[];
  resolved_at: Date;
}

/** The cached identity resolutions of these agents, by agent id. */
export async function findCachedIdentities(db: Executor, agentIds: string[]): Promise<Map<string, CachedIdentity>> {
  if (!agentIds.length) return new Map();
  const rows = await db.selectFrom('agent_identities').selectAll().where('agent_id', 'in', agentIds).execute();
  return new Map(rows.map((r) => [r.agent_id, r]));
}

/** Stores an agent's fresh identity resolution in the cache. */
export async function saveCachedIdentity(db: Executor, agentId: string, row: IdentityRow): Promise<void> {
  await db
    .insertInto('agent_identities')
    .values({ agent_id: agentId, ...row })
    .onConflict((oc) => oc.column('agent_id').doUpdateSet(row))
    .execute();
}

/** A sign-in challenge as it was issued. */
export interface ChallengeRow {
  nonce: string;
  /** Lower-case wallet address. */
  address: string;
  handle: string;
  message: string;
  issuedAt: Date;
  expiresAt: Date;
}

/** Stores an issued sign-in challenge. */
export async function insertChallenge(db: Executor, c: ChallengeRow): Promise<void> {
  await db
    .insertInto('auth_challenges')
    .values({
      nonce: c.nonce,
      address: c.address,
      handle: c.handle,
      message: c.message,
      issued_at: c.issuedAt,
      expires_at: c.expiresAt,
    })
    .execute();
}

/** The challenge of a nonce, used or not. */
export function findChallenge(db: Executor, nonce: string) {
  return db.selectFrom('auth_challenges').selectAll().where('nonce', '=', nonce).executeTakeFirst();
}

/** Marks a challenge used, once: false when it already was. */
export async function consumeChallenge(
  db: Executor,
  nonce: string,
  usedAt: Date,
  paymentId?: string,
): Promise<boolean> {
  const row = await db
    .updateTable('auth_challenges')
    .set({ used_at: usedAt, payment_id: paymentId ?? null })
    .where('nonce', '=', nonce)
    .where('used_at', 'is', null)
    .returning('nonce')
    .executeTakeFirst();
  return Boolean(row);
}
