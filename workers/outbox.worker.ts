import type { Db } from '../src/data/db.js';
import { DISPATCH_BATCH, dispatchPendingEvents } from '../src/domain/events/dispatcher.js';
import type { Logger } from '../src/platform/logger.js';
import type { Queues } from '../src/platform/queues.js';
import { startPollingLoop, type PollingLoop } from './polling-loop.js';

/**
 * The outbox dispatcher of a worker process: a dispatch pass every `intervalMs` (at once again
 * after a full batch), backing off while the database or Redis is down. Any number of workers may
 * run it: each pass claims its own events.
 */
export function startOutboxDispatcher(db: Db, queues: Queues, log: Logger, intervalMs = 200): PollingLoop {
  return startPollingLoop({
    name: 'event dispatch',
    intervalMs,
    log,
    pass: async () => (await dispatchPendingEvents(db, queues, log)) >= DISPATCH_BATCH,
  });
}
