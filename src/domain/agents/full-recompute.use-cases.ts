import { readAgentIdBatches } from '../../data/agents.repository.js';
import { BATCH_STATEMENT_TIMEOUT_MS, type Db, withStatementTimeout } from '../../data/db.js';
import { rebuildAllFeatures } from './similar.js';

export interface FullRecomputeDeps {
  db: Db;
  /** Queues the recompute of every page of agents (ids ascending within and across pages). */
  queuePages(pages: string[][]): Promise<void>;
}

/**
 * Starts the full recompute of every agent's documents: rebuilds every agent's similarity
 * features in one pass, then queues the agents in pages of `pageSize`. The pages then rank their
 * agents against the signatures just rebuilt. Returns the agents queued and the signature entries
 * written.
 */
export async function startFullRecompute(
  deps: FullRecomputeDeps,
  pageSize: number,
): Promise<{ queued: number; features: number }> {
  // Rebuilding every agent's features takes tens of seconds at 100k agents, over a request's statement timeout.
  const features = await withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, () => rebuildAllFeatures(deps.db));
  // Every page in one statement and queued in bulk: queued one by one, the pages already running
  // (same process) slowed the loop to ~13 pages a second at 100k agents.
  const pages = await readAgentIdBatches(deps.db, pageSize);
  await deps.queuePages(pages);
  return { queued: pages.reduce((n, ids) => n + ids.length, 0), features };
}
