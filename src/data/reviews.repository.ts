import { sql } from 'kysely';
import type { Executor } from './db.js';

/** A purchase as a review names it: who paid whom, for which skill version, and whether it was refunded. */
export interface ReviewablePurchase {
  payment_id: string;
  post_id: string;
  post_version: number;
  buyer_address: string;
  buyer_agent_id: string | null;
  seller_id: string;
  seller_wallet: string;
  seller_token_id: string | null;
  pay_to: string;
  tx_hash: string;
  refunded_at: Date | null;
}

export function findReviewablePurchase(db: Executor, paymentId: string): Promise<ReviewablePurchase | undefined> {
  return db
    .selectFrom('purchases as u')
    .innerJoin('payments as p', 'p.id', 'u.payment_id')
    .innerJoin('agents as s', 's.id', 'u.seller_id')
    .select([
      'u.payment_id',
      'u.post_id',
      'u.post_version',
      'u.buyer_address',
      'u.buyer_agent_id',
      'u.seller_id',
      's.wallet_address as seller_wallet',
      's.token_id as seller_token_id',
      'p.pay_to',
      'u.tx_hash',
      'u.refunded_at',
    ])
    .where('u.payment_id', '=', paymentId)
    .executeTakeFirst();
}

/**
 * The newest revision of a buyer's review of a skill, locked until the transaction ends. NO KEY
 * UPDATE is enough to keep two edits apart, and it lets the feedback follower's insert (whose
 * foreign key locks the review FOR KEY SHARE) through, instead of the two waiting on each other
 * for the review's and the skill's rows.
 */
export function lockLatestReview(trx: Executor, postId: string, buyer: string) {
  return trx
    .selectFrom('reviews')
    .select(['id', 'revision', 'status', 'issued_at', 'payment_id'])
    .where('post_id', '=', postId)
    .where('buyer_address', '=', buyer)
    .orderBy('revision', 'desc')
    .limit(1)
    .forNoKeyUpdate()
    .executeTakeFirst();
}

export interface NewReview {
  post_id: string;
  seller_id: string;
  buyer_address: string;
  buyer_agent_id: string | null;
  payment_id: string;
  post_version: number;
  revision: number;
  rating: number;
  text: string;
  issued_at: Date;
  signature: string;
  feedback: string;
  feedback_hash: string;
}

/** Supersedes the live revision, if any, and writes the new one live. */
export async function insertReviewRevision(trx: Executor, r: NewReview): Promise<{ id: string; created_at: Date }> {
  await trx
    .updateTable('reviews')
    .set({ status: 'superseded' })
    .where('post_id', '=', r.post_id)
    .where('buyer_address', '=', r.buyer_address)
    .where('status', '=', 'live')
    .execute();
  return trx.insertInto('reviews').values(r).returning(['id', 'created_at']).executeTakeFirstOrThrow();
}

export function revokeLiveReview(trx: Executor, id: string, at: Date, signature: string | null) {
  return trx
    .updateTable('reviews')
    .set({ status: 'revoked', revoked_at: at, revocation_signature: signature })
    .where('id', '=', id)
    .where('status', '=', 'live')
    .executeTakeFirst();
}

/** Writes the seller's response; false when one exists already. */
export async function insertResponse(
  trx: Executor,
  r: { post_id: string; buyer_address: string; seller_id: string; text: string },
): Promise<boolean> {
  const row = await trx
    .insertInto('review_responses')
    .values(r)
    .onConflict((oc) => oc.columns(['post_id', 'buyer_address']).doNothing())
    .returning('post_id')
    .executeTakeFirst();
  return Boolean(row);
}

/** A live review as published: with its purchase, the seller's response and its on-chain feedback. */
export interface PublishedReview {
  id: string;
  post_id: string;
  buyer_address: string;
  buyer_handle: string | null;
  payment_id: string;
  purchase_tx: string;
  post_version: number;
  revision: number;
  rating: number;
  text: string;
  issued_at: Date;
  signature: string;
  feedback_hash: string;
  created_at: Date;
  refunded: boolean;
  response_text: string | null;
  response_at: Date | null;
  chain_tx: string | null;
  chain_index: string | null;
  chain_verification: 'verified' | 'unverified' | null;
  chain_revoked: boolean;
}

const publishedReviews = (db: Executor) =>
  db
    .selectFrom('reviews as r')
    .innerJoin('purchases as u', 'u.payment_id', 'r.payment_id')
    .leftJoin('agents as b', 'b.id', 'r.buyer_agent_id')
    .leftJoin('review_responses as x', (j) =>
      j.onRef('x.post_id', '=', 'r.post_id').onRef('x.buyer_address', '=', 'r.buyer_address'),
    )
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('onchain_feedback as f')
          .select(['f.tx_hash', 'f.feedback_index', 'f.verification', 'f.revoked_block_number'])
          .whereRef('f.review_id', '=', 'r.id')
          .whereRef('f.client_address', '=', 'r.buyer_address')
          .where('f.verification', '=', 'verified')
          .orderBy('f.block_number', 'desc')
          .limit(1)
          .as('f'),
      (j) => j.onTrue(),
    )
    .select([
      'r.id',
      'r.post_id',
      'r.buyer_address',
      'b.handle as buyer_handle',
      'r.payment_id',
      'u.tx_hash as purchase_tx',
      'r.post_version',
      'r.revision',
      'r.rating',
      'r.text',
      'r.issued_at',
      'r.signature',
      'r.feedback_hash',
      'r.created_at',
      sql<boolean>`u.refunded_at IS NOT NULL`.as('refunded'),
      'x.text as response_text',
      'x.created_at as response_at',
      'f.tx_hash as chain_tx',
      sql<string | null>`f.feedback_index::text`.as('chain_index'),
      'f.verification as chain_verification',
      sql<boolean>`coalesce(f.revoked_block_number IS NOT NULL, false)`.as('chain_revoked'),
    ])
    .where('r.status', '=', 'live');

/** The newest live reviews of a skill (at most `limit`). */
export function readSkillReviews(db: Executor, postId: string, limit: number): Promise<PublishedReview[]> {
  return publishedReviews(db)
    .where('r.post_id', '=', postId)
    .orderBy('r.created_at', 'desc')
    .orderBy('r.id')
    .limit(limit)
    .execute() as Promise<PublishedReview[]>;
}

/** The newest live reviews of every skill of a seller (at most `limit`). */
export function readSellerReviews(db: Executor, sellerId: string, limit: number): Promise<PublishedReview[]> {
  return publishedReviews(db)
    .where('r.seller_id', '=', sellerId)
    .orderBy('r.created_at', 'desc')
    .orderBy('r.id')
    .limit(limit)
    .execute() as Promise<PublishedReview[]>;
}

/** The live review of a skill by one buyer. */
export function findLiveReview(db: Executor, postId: string, buyer: string) {
  return db
    .selectFrom('reviews')
    .selectAll()
    .where('post_id', '=', postId)
    .where('buyer_address', '=', buyer)
    .where('status', '=', 'live')
    .executeTakeFirst();
}

export interface Rating {
  count: number;
  total: number;
  distribution: number[];
  adjusted: number | null;
}

const NO_RATING: Rating = { count: 0, total: 0, distribution: [0, 0, 0, 0, 0], adjusted: null };

/** A skill's rating as the database keeps it (skill_ratings). */
export async function readSkillRating(db: Executor, postId: string): Promise<Rating> {
  const row = await db
    .selectFrom('skill_ratings')
    .select(['count', 'total', 'distribution', 'adjusted'])
    .where('post_id', '=', postId)
    .executeTakeFirst();
  return row ? { ...row, adjusted: row.count ? Number(row.adjusted) : null } : NO_RATING;
}

/** The ratings of many skills at once, by skill. */
export async function readSkillRatings(db: Executor, postIds: readonly string[]): Promise<Map<string, Rating>> {
  if (!postIds.length) return new Map();
  const rows = await db
    .selectFrom('skill_ratings')
    .select(['post_id', 'count', 'total', 'distribution', 'adjusted'])
    .where('post_id', 'in', postIds)
    .execute();
  return new Map(rows.map((r) => [r.post_id, { ...r, adjusted: r.count ? Number(r.adjusted) : null }]));
}

/** Every skill's rating of a seller summed: the seller's rating (the prior applied once, in the caller). */
export async function readSellerRatingTotals(db: Executor, sellerId: string): Promise<Omit<Rating, 'adjusted'>> {
  return (await readSellerRatingTotalsMany(db, [sellerId])).get(sellerId) ?? NO_TOTALS;
}

const NO_TOTALS: Omit<Rating, 'adjusted'> = { count: 0, total: 0, distribution: [0, 0, 0, 0, 0] };

/** `readSellerRatingTotals` of many sellers in one statement, every seller present. */
export async function readSellerRatingTotalsMany(
  db: Executor,
  sellerIds: readonly string[],
): Promise<Map<string, Omit<Rating, 'adjusted'>>> {
  const out = new Map(sellerIds.map((id) => [id, NO_TOTALS]));
  if (!sellerIds.length) return out;
  const rows = await sql<{ seller_id: string; count: number; total: number; distribution: number[] }>`
    SELECT p.author_id AS seller_id, sum(r.count)::int AS count, sum(r.total)::int AS total,
           ARRAY[sum(r.distribution[1]), sum(r.distribution[2]), sum(r.distribution[3]),
                 sum(r.distribution[4]), sum(r.distribution[5])]::int[] AS distribution
    FROM skill_ratings r JOIN posts p ON p.id = r.post_id
    WHERE p.author_id = ANY(${[...sellerIds]}::uuid[])
    GROUP BY p.author_id`.execute(db);
  for (const r of rows.rows) out.set(r.seller_id, { count: r.count, total: r.total, distribution: r.distribution });
  return out;
}

/** The feedback file of a review, by its keccak-256 hash. */
export function findFeedbackFile(db: Executor, hash: string) {
  return db
    .selectFrom('reviews')
    .select(['feedback', 'id', 'post_id', 'buyer_address', 'seller_id', 'payment_id', 'status'])
    .where('feedback_hash', '=', hash)
    .executeTakeFirst();
}
