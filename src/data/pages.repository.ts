import { sql } from 'kysely';
import type { Executor } from './db.js';
import type { PostFeedItem } from './feeds.repository.js';
import { notOwnPurchase } from './own-purchases.js';

/**
 * The newest entries of the skill feed that are published skills, newest first: the home page's
 * "newest skills". Read backwards off the feed's order index, so it stops after `limit` rows.
 */
export async function readNewestPublishedPosts(db: Executor, limit: number): Promise<PostFeedItem[]> {
  const { rows } = await sql<{ item: PostFeedItem }>`
    SELECT f.item FROM feed_entries f
    WHERE f.kind = 'post' AND f.item IS NOT NULL AND f.item->>'status' = 'published'
    ORDER BY f.feed_at DESC LIMIT ${limit}`.execute(db);
  return rows.map((r) => r.item);
}

/** A skill's sales as its page states them. */
export interface SkillPageFigures {
  /** Settled purchases of the skill by wallets other than its seller's. */
  sales: number;
  /** Distinct wallets among those purchases. */
  buyers: number;
}

/**
 * The sales a skill's page shows next to what the post states. A seller's purchase of its own
 * skill counts nowhere (own-purchases.ts), so not here either.
 */
export async function readSkillPageFigures(db: Executor, postId: string): Promise<SkillPageFigures> {
  const { rows } = await sql<{ sales: number; buyers: number }>`
    SELECT count(*)::int AS sales, count(DISTINCT u.buyer_address)::int AS buyers
    FROM purchases u WHERE u.post_id = ${postId} AND ${notOwnPurchase('u')}`.execute(db);
  return { sales: rows[0]?.sales ?? 0, buyers: rows[0]?.buyers ?? 0 };
}
