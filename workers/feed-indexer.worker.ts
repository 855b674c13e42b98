import type { Db } from '../src/data/db.js';
import { indexFeedsAndPublishDefaults } from '../src/domain/discovery/feed-indexer.js';
import type { BazaarContext } from '../src/domain/discovery/bazaar-index.js';
import type { Logger } from '../src/platform/logger.js';
import { startPollingLoop, type PollingLoop } from './polling-loop.js';

/**
 * The feed indexer of a worker process (the feeds, then the x402 Bazaar listings): an indexing pass every `intervalMs`, backing off while the
 * database is down. Any number of workers may run it: an advisory lock lets one index each kind.
 */
export function startFeedIndexer(
  db: Db,
  log: Logger,
  publishDefaults: () => Promise<unknown>,
  bazaar: BazaarContext,
  intervalMs = 200,
): PollingLoop {
  return startPollingLoop({
    name: 'feed indexing',
    intervalMs,
    log,
    pass: async () => {
      await indexFeedsAndPublishDefaults(db, publishDefaults, bazaar);
      return false;
    },
  });
}
