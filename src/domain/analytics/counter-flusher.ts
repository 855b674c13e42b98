import type { Db } from '../../data/db.js';
import { addFunnelCounts } from '../../data/analytics.repository.js';
import type { Logger } from '../../platform/logger.js';
import { addPlannedJobs, type Queues } from '../../platform/queues.js';
import { analyticsJob } from './analytics.use-cases.js';
import type { FunnelCounters } from './funnel-counters.js';

export interface CounterFlushDeps {
  db: Db;
  queues: Queues;
  counters: FunnelCounters;
  log: Logger;
}

/**
 * One flush: takes the process's pending counters and adds them in one statement, then queues the
 * analytics refresh of the sellers counted (coalesced per seller). If the database refuses, the
 * counts are put back for the next flush and the error thrown (the polling loop backs off); if
 * only Redis refuses, the counts are written and the documents refresh at the seller's next event
 * or flush. Never on a request's path.
 */
export async function flushFunnelCounters(deps: CounterFlushDeps): Promise<boolean> {
  const counts = deps.counters.drain();
  if (!counts.length) {
    deps.counters.flushed();
    return false;
  }
  let sellers: string[];
  try {
    sellers = await addFunnelCounts(deps.db, counts);
  } catch (err) {
    deps.counters.restore(counts);
    throw err;
  }
  deps.counters.flushed();
  try {
    const now = Date.now();
    await addPlannedJobs(
      deps.queues,
      sellers.map((id) => analyticsJob(id, now)),
    );
  } catch (err) {
    deps.log.warn({ err, sellers: sellers.length }, 'analytics refresh not queued after a counter flush');
  }
  deps.log.debug({ counters: counts.length, sellers: sellers.length }, 'funnel counters flushed');
  return false;
}
