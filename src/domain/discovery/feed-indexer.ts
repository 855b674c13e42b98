import type { Db } from '../../data/db.js';
import { indexFeed } from '../../data/feeds.repository.js';
import { indexBazaarListings, type BazaarContext } from './bazaar-index.js';

/**
 * One pass of the feed indexer: indexes both kinds, then republishes the feeds' default forms to
 * the bucket when the pass wrote any entry, then brings the x402 Bazaar listings up to date
 * (bazaar-index.ts). Returns how many feed entries were written.
 */
export async function indexFeedsAndPublishDefaults(
  db: Db,
  publishDefaults: () => Promise<unknown>,
  bazaar: BazaarContext,
): Promise<number> {
  const agents = await indexFeed(db, 'agent');
  const posts = await indexFeed(db, 'post');
  const written = (agents ?? 0) + (posts ?? 0);
  if (written > 0) await publishDefaults();
  await indexBazaarListings(db, bazaar);
  return written;
}
