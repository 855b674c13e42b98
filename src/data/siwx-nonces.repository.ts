import type { Executor } from './db.js';

/**
 * Records a Sign-In-With-X nonce as used. Returns false when it was used already: the primary
 * key, not a read before the write, decides, so of two concurrent copies of a header one wins.
 */
export async function recordSiwxNonce(
  db: Executor,
  used: { nonce: string; address: string; resource: string },
): Promise<boolean> {
  const row = await db
    .insertInto('siwx_used_nonces')
    .values({ nonce: used.nonce, address: used.address.toLowerCase(), resource: used.resource })
    .onConflict((oc) => oc.column('nonce').doNothing())
    .returning('nonce')
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether a nonce granted access already. */
export async function isSiwxNonceUsed(db: Executor, nonce: string): Promise<boolean> {
  const row = await db.selectFrom('siwx_used_nonces').select('nonce').where('nonce', '=', nonce).executeTakeFirst();
  return row !== undefined;
}

/** Forgets used nonces older than `olderThanMs`: messages that old are refused by their age anyway. */
export async function purgeSiwxNonces(db: Executor, olderThanMs: number): Promise<number> {
  const result = await db
    .deleteFrom('siwx_used_nonces')
    .where('used_at', '<', new Date(Date.now() - olderThanMs))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
