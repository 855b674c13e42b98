import { sql, type RawBuilder } from 'kysely';
import type { Executor } from './db.js';

/** Takes the follower's transaction-scoped lock: false when another process's pass holds it. */
export async function tryFollowerLock(trx: Executor, name: string): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(hashtext(${name})) AS ok`.execute(trx);
  return Boolean(rows[0]?.ok);
}

export function readCursor(trx: Executor, name: string) {
  return trx
    .selectFrom('chain_cursors')
    .select(['block_number', 'block_hash'])
    .where('name', '=', name)
    .executeTakeFirst();
}

export async function writeCursor(trx: Executor, name: string, blockNumber: bigint, blockHash: string) {
  await trx
    .insertInto('chain_cursors')
    .values({ name, block_number: blockNumber.toString(), block_hash: blockHash })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet({ block_number: blockNumber.toString(), block_hash: blockHash, updated_at: new Date() }),
    )
    .execute();
}

/** The blocks from `from` on that indexed rows name (their feedback or its revocation), with the hash recorded. */
export async function indexedBlocksFrom(trx: Executor, registry: string, from: bigint) {
  const { rows } = await sql<{ block_number: string; block_hash: string }>`
    SELECT block_number::text, block_hash FROM onchain_feedback WHERE registry = ${registry} AND block_number >= ${from.toString()}
    UNION
    SELECT revoked_block_number::text, revoked_block_hash FROM onchain_feedback
    WHERE registry = ${registry} AND revoked_block_number >= ${from.toString()}`.execute(trx);
  return rows;
}

/**
 * Locks, in id order, the skills rated by the feedback rows `feedback` selects (alias `f`) and by
 * the review `reviewId`, before those rows are written (the order holds within one write; a pass
 * of several events takes its skills event by event). Writing a feedback row recounts its
 * skill's rating under a lock on the skill's row; a settling refund takes the skill's row first,
 * then the feedback rows of the refunded purchase. Taking the skills first here keeps the one
 * order, where feedback-row-first deadlocked against a refund.
 */
async function lockRatedSkills(trx: Executor, feedback: RawBuilder<unknown>, reviewId: string | null = null) {
  await sql`
    SELECT id FROM posts WHERE id IN (
      SELECT r.post_id FROM onchain_feedback f JOIN reviews r ON r.id = f.review_id WHERE ${feedback}
      UNION ALL SELECT post_id FROM reviews WHERE id = ${reviewId}::uuid)
    ORDER BY id FOR NO KEY UPDATE`.execute(trx);
}

/**
 * Forgets what a block no longer on the chain said: its feedback is deleted and its revocations
 * undone. Returns the sellers whose feedback changed.
 */
export async function forgetBlock(trx: Executor, registry: string, blockNumber: string, blockHash: string) {
  await lockRatedSkills(
    trx,
    sql`f.registry = ${registry} AND ((f.block_number = ${blockNumber} AND f.block_hash = ${blockHash})
        OR (f.revoked_block_number = ${blockNumber} AND f.revoked_block_hash = ${blockHash}))`,
  );
  const deleted = await trx
    .deleteFrom('onchain_feedback')
    .where('registry', '=', registry)
    .where('block_number', '=', blockNumber)
    .where('block_hash', '=', blockHash)
    .returning('seller_id')
    .execute();
  const unrevoked = await trx
    .updateTable('onchain_feedback')
    .set({ revoked_block_number: null, revoked_block_hash: null })
    .where('registry', '=', registry)
    .where('revoked_block_number', '=', blockNumber)
    .where('revoked_block_hash', '=', blockHash)
    .returning('seller_id')
    .execute();
  return [...deleted, ...unrevoked].map((r) => r.seller_id).filter((s): s is string => s !== null);
}

export interface FeedbackRow {
  chain_id: string;
  registry: string;
  agent_token_id: string;
  seller_id: string | null;
  client_address: string;
  feedback_index: string;
  value: string;
  value_decimals: number;
  tag1: string;
  tag2: string;
  endpoint: string;
  feedback_uri: string;
  feedback_hash: string;
  block_number: string;
  block_hash: string;
  tx_hash: string;
  log_index: number;
  review_id: string | null;
  verification: 'verified' | 'unverified';
  reason: string | null;
}

/** The feedback row of one (chain, registry, agent, client, index), as `lockRatedSkills` selects it. */
const feedbackKey = (k: { chainId: string; registry: string; agentTokenId: string; client: string; index: string }) =>
  sql`f.chain_id = ${k.chainId} AND f.registry = ${k.registry} AND f.agent_token_id = ${k.agentTokenId}
      AND f.client_address = ${k.client} AND f.feedback_index = ${k.index}`;

/** Records one NewFeedback (again, after a reorganisation moved it: the newest sighting wins). */
export async function upsertFeedback(trx: Executor, row: FeedbackRow) {
  await lockRatedSkills(
    trx,
    feedbackKey({
      chainId: row.chain_id,
      registry: row.registry,
      agentTokenId: row.agent_token_id,
      client: row.client_address,
      index: row.feedback_index,
    }),
    row.review_id,
  );
  await trx
    .insertInto('onchain_feedback')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['chain_id', 'registry', 'agent_token_id', 'client_address', 'feedback_index']).doUpdateSet((eb) => ({
        block_number: eb.ref('excluded.block_number'),
        block_hash: eb.ref('excluded.block_hash'),
        tx_hash: eb.ref('excluded.tx_hash'),
        log_index: eb.ref('excluded.log_index'),
        value: eb.ref('excluded.value'),
        value_decimals: eb.ref('excluded.value_decimals'),
        feedback_uri: eb.ref('excluded.feedback_uri'),
        feedback_hash: eb.ref('excluded.feedback_hash'),
        review_id: eb.ref('excluded.review_id'),
        verification: eb.ref('excluded.verification'),
        reason: eb.ref('excluded.reason'),
      })),
    )
    .execute();
}

/** Records a FeedbackRevoked; returns the seller of the feedback, when it is indexed. */
export async function markRevoked(
  trx: Executor,
  key: { chainId: string; registry: string; agentTokenId: string; client: string; index: string },
  blockNumber: string,
  blockHash: string,
) {
  await lockRatedSkills(trx, feedbackKey(key));
  const row = await trx
    .updateTable('onchain_feedback')
    .set({ revoked_block_number: blockNumber, revoked_block_hash: blockHash })
    .where('chain_id', '=', key.chainId)
    .where('registry', '=', key.registry)
    .where('agent_token_id', '=', key.agentTokenId)
    .where('client_address', '=', key.client)
    .where('feedback_index', '=', key.index)
    .returning('seller_id')
    .executeTakeFirst();
  return row?.seller_id ?? null;
}

/** What verifying a feedback needs to know of the review its hash names and of its purchase. */
export function findReviewForFeedback(trx: Executor, hash: string) {
  return trx
    .selectFrom('reviews as r')
    .innerJoin('purchases as u', 'u.payment_id', 'r.payment_id')
    .innerJoin('payments as p', 'p.id', 'r.payment_id')
    .innerJoin('agents as s', 's.id', 'r.seller_id')
    .select([
      'r.id',
      'r.post_id',
      'r.buyer_address',
      'r.seller_id',
      'r.rating',
      's.token_id as seller_token_id',
      'p.pay_to',
      'p.payer',
      'u.refunded_at',
    ])
    .where('r.feedback_hash', '=', hash)
    .executeTakeFirst();
}

export function findSellerByToken(trx: Executor, tokenId: string) {
  return trx.selectFrom('agents').select('id').where('token_id', '=', tokenId).executeTakeFirst();
}
