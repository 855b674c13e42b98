import { sql } from 'kysely';
import type { Executor } from './db.js';
import type { PostFeedItem } from './feeds.repository.js';

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
