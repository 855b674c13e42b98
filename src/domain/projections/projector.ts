import type { Db } from '../../data/db.js';
import { indexFeed } from '../../data/projections.repository.js';
import { indexBazaarListings, type BazaarContext } from './bazaar-listings.js';

/**
 * One pass of the read models kept in the database (docs/projections.md): both feeds, then the
 * feeds' default forms republished to the bucket when the pass wrote any entry, then the x402
 * Bazaar listings. Each follows change_txid from its own watermark. Returns how many feed entries
 * were written.
 */
export async function projectFeedsAndListings(
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
