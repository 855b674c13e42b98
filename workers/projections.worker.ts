import type { Db } from '../src/data/db.js';
import type { BazaarContext } from '../src/domain/projections/bazaar-listings.js';
import { projectFeedsAndListings } from '../src/domain/projections/projector.js';
import { projectSkillDocuments } from '../src/domain/projections/skill-documents.js';
import type { Logger } from '../src/platform/logger.js';
import type { Queues } from '../src/platform/queues.js';
import { startPollingLoop, type PollingLoop } from './polling-loop.js';

/**
 * The projections of a worker process (docs/projections.md), as two loops of a pass every
 * `intervalMs` (at once again while a backlog is worked off in batches), each backing off on its own while what it needs is down: the read models kept in
 * the database (feeds, Bazaar listings), and the skill documents (manifests, pages, the skills
 * index), which are published by jobs and so also need Redis. An outage of Redis never holds the
 * feeds back. Any number of workers may run them: an advisory lock lets one pass of each run.
 */
export function startProjections(
  deps: { db: Db; queues: Queues; log: Logger; publishDefaults: () => Promise<unknown>; bazaar: BazaarContext },
  intervalMs = 200,
): PollingLoop {
  const defaults = { due: false };
  const loops = [
    startPollingLoop({
      name: 'feed indexing',
      intervalMs,
      log: deps.log,
      pass: async () => (await projectFeedsAndListings(deps.db, deps.publishDefaults, deps.bazaar, defaults)).more,
    }),
    startPollingLoop({
      name: 'skill documents',
      intervalMs,
      log: deps.log,
      pass: async () => Boolean((await projectSkillDocuments(deps.db, deps.queues))?.more),
    }),
  ];
  return {
    done: Promise.all(loops.map((l) => l.done)).then(() => undefined),
    stop: async () => void (await Promise.all(loops.map((l) => l.stop()))),
  };
}
