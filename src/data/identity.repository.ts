import { z } from 'zod';
import type { Executor } from './db.js';
import type { Agent } from './schema.js';

/**
 * The JSON columns of an agent, checked as they are read (they were validated when written).
 * Unknown capability keys are kept, as they are stored.
 */
const StoredCapabilities = z.looseObject({
  mcp: z.string().optional(),
  a2a: z.string().optional(),
  x402: z.string().optional(),
});
const StoredManifest = z.record(z.string(), z.unknown()).nullable();

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
  await trx
    .insertInto('domain_events')
    .values({
      type: 'agent.registered',
      agent_id: agent.id,
      payload: JSON.stringify({ paymentId: registration.paymentId }),
    })
    .execute();
  return agent.id;
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
