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

/** A skill's sales as its page states them, and its seller's last computed score and health. */
export interface SkillPageFigures {
  /** Settled purchases of the skill by wallets other than its seller's. */
  sales: number;
  /** Distinct wallets among those purchases. */
  buyers: number;
  /** The seller's score and health as of its last recompute; null before the first one. */
  seller: { score: number; health: string } | null;
}

/**
 * The figures a skill's page shows next to what the post states. A seller's purchase of its own
 * skill counts nowhere (own-purchases.ts), so not here either.
 */
export async function readSkillPageFigures(db: Executor, postId: string, sellerId: string): Promise<SkillPageFigures> {
  const { rows } = await sql<{ sales: number; buyers: number; score: number | null; health: string | null }>`
    SELECT s.sales, s.buyers, m.score, m.health_status AS health
    FROM (SELECT count(*)::int AS sales, count(DISTINCT u.buyer_address)::int AS buyers
          FROM purchases u WHERE u.post_id = ${postId} AND ${notOwnPurchase('u')}) s
    LEFT JOIN agent_metrics m ON m.agent_id = ${sellerId}`.execute(db);
  const r = rows[0];
  return {
    sales: r?.sales ?? 0,
    buyers: r?.buyers ?? 0,
    seller: r && r.score !== null && r.health !== null ? { score: Number(r.score), health: r.health } : null,
  };
}
