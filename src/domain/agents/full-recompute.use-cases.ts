import { readAgentIdsAfter } from '../../data/agents.repository.js';
import { BATCH_STATEMENT_TIMEOUT_MS, type Db, withStatementTimeout } from '../../data/db.js';
import { rebuildAllFeatures } from './similar.js';

export interface FullRecomputeDeps {
  db: Db;
  /** Queues the recompute of these pages of agents (ids ascending within and across pages). */
  queuePages(pages: string[][]): Promise<void>;
}

/** Pages read and queued at a time: the ids the job holds at once (and reads in one statement) are this many pages' worth. */
const PAGES_PER_CHUNK = 40;

/** `ids` cut into pages of `pageSize`, the last one shorter. */
export function pagesOf(ids: readonly string[], pageSize: number): string[][] {
  const pages: string[][] = [];
  for (let i = 0; i < ids.length; i += pageSize) pages.push(ids.slice(i, i + pageSize));
  return pages;
}

/**
 * Starts the full recompute of every agent's documents: rebuilds every agent's similarity
 * features in one pass, then queues the agents in pages of `pageSize`, walking the agents by id a
 * chunk of pages at a time (queued in bulk: queued one by one, the pages already running in the
 * same process slowed the loop to ~13 pages a second at 100k agents). The pages then rank their
 * agents against the signatures just rebuilt. Returns the agents queued and the signature entries
 * written.
 */
export async function startFullRecompute(
  deps: FullRecomputeDeps,
  pageSize: number,
): Promise<{ queued: number; features: number }> {
  // Rebuilding every agent's features takes tens of seconds at 100k agents, over a request's statement timeout.
  const features = await withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, () => rebuildAllFeatures(deps.db));
  let queued = 0;
  let after: string | null = null;
  for (;;) {
    const ids = await readAgentIdsAfter(deps.db, after, pageSize * PAGES_PER_CHUNK);
    if (!ids.length) break;
    await deps.queuePages(pagesOf(ids, pageSize));
    queued += ids.length;
    if (ids.length < pageSize * PAGES_PER_CHUNK) break;
    after = ids[ids.length - 1] ?? null;
  }
  return { queued, features };
}
