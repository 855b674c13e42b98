import type { Executor } from './db.js';

/** The `limit` most used tags with their published skill counts, most used first. */
export async function findTopTags(db: Executor, limit: number): Promise<Array<{ tag: string; posts: number }>> {
  return db
    .selectFrom('tag_stats')
    .select(['tag', 'posts'])
    .orderBy('posts', 'desc')
    .orderBy('tag')
    .limit(limit)
    .execute();
}
