import type { Transaction } from 'kysely';
import type { Db } from '../../data/db.js';
import type { DB } from '../../data/schema.js';

type Reader = Db | Transaction<DB>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A post with its author's public fields, or undefined (also for ids that are not UUIDs). */
export async function findPostWithAuthor(db: Reader, postId: string) {
  if (!UUID.test(postId)) return undefined;
  return db
    .selectFrom('posts')
    .innerJoin('agents', 'agents.id', 'posts.author_id')
    .selectAll('posts')
    .select(['agents.handle as author_handle', 'agents.wallet_address as author_wallet'])
    .where('posts.id', '=', postId.toLowerCase())
    .executeTakeFirst();
}
export type PostWithAuthor = NonNullable<Awaited<ReturnType<typeof findPostWithAuthor>>>;

export function findVersion(db: Reader, postId: string, version: number) {
  return db
    .selectFrom('post_versions')
    .selectAll()
    .where('post_id', '=', postId)
    .where('version', '=', version)
    .executeTakeFirstOrThrow();
}

/** Whether `wallet` bought `postId` (a settled purchase is an entitlement for good). */
export async function hasEntitlement(db: Reader, postId: string, wallet: string): Promise<boolean> {
  const row = await db
    .selectFrom('purchases')
    .select('id')
    .where('post_id', '=', postId)
    .where('buyer_address', '=', wallet.toLowerCase())
    .limit(1)
    .executeTakeFirst();
  return Boolean(row);
}

export function insertEvent(
  trx: Reader,
  type: string,
  fields: { agentId?: string; postId?: string; payload?: Record<string, unknown> },
) {
  return trx
    .insertInto('domain_events')
    .values({
      type,
      agent_id: fields.agentId ?? null,
      post_id: fields.postId ?? null,
      payload: JSON.stringify(fields.payload ?? {}),
    })
    .execute();
}
