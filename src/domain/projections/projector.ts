import type { Db } from '../../data/db.js';
import { indexFeed } from '../../data/projections.repository.js';
import { indexBazaarListings, type BazaarContext } from './bazaar-listings.js';

/**
 * One pass of the read models kept in the database (docs/projections.md): both feeds, then the
 * feeds' default forms republished to the bucket when the pass wrote any entry, then the x402
 * Bazaar listings. Each follows change_txid from its own cursors, one bounded batch per pass. Returns
 * how many feed entries were written, and whether more changes wait.
 */
export async function projectFeedsAndListings(
  db: Db,
  publishDefaults: () => Promise<unknown>,
  bazaar: BazaarContext,
  defaults: { due: boolean } = { due: false },
): Promise<{ written: number; more: boolean }> {
  const agents = await indexFeed(db, 'agent');
  const posts = await indexFeed(db, 'post');
  const written = (agents?.written ?? 0) + (posts?.written ?? 0);
  // While a backlog is worked off, the default forms are published once it is done, not per
  // batch: `defaults` (the loop's) remembers that a batch wrote entries meanwhile.
  const feedsMore = Boolean(agents?.more || posts?.more);
  defaults.due ||= written > 0;
  if (defaults.due && !feedsMore) {
    await publishDefaults();
    defaults.due = false;
  }
  const listings = await indexBazaarListings(db, bazaar);
  return { written, more: feedsMore || Boolean(listings?.more) };
}
