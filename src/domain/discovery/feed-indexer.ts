import type { Db } from '../../data/db.js';
import { indexFeed } from '../../data/feed-index.repository.js';

/**
 * One pass of the feed indexer: indexes both kinds, then republishes the feeds' default forms to
 * the bucket when the pass wrote any entry. Returns how many entries were written.
 */
export async function indexFeedsAndPublishDefaults(db: Db, publishDefaults: () => Promise<unknown>): Promise<number> {
  const agents = await indexFeed(db, 'agent');
  const posts = await indexFeed(db, 'post');
  const written = (agents ?? 0) + (posts ?? 0);
  if (written > 0) await publishDefaults();
  return written;
}
