import { readAgentIdsAfter } from '../../data/agents.repository.js';
import { BATCH_STATEMENT_TIMEOUT_MS, type Db, withStatementTimeout } from '../../data/db.js';
import { sleep } from '../../platform/net.js';
import { rebuildAllFeatures } from './similar.js';

/** Pages read and queued at a time: the ids the job holds at once (and reads in one statement) are this many pages' worth. */
const PAGES_PER_CHUNK = 40;

/** `ids` cut into pages of `pageSize`, the last one shorter. */
export function pagesOf(ids: readonly string[], pageSize: number): string[][] {
  const pages: string[][] = [];
  for (let i = 0; i < ids.length; i += pageSize) pages.push(ids.slice(i, i + pageSize));
  return pages;
}

/** Walks every agent by id, a chunk of pages at a time, handing each chunk's pages to `queue`. Returns the agents walked. */
async function walkPages(db: Db, pageSize: number, queue: (pages: string[][]) => Promise<void>): Promise<number> {
  let walked = 0;
  let after: string | null = null;
  for (;;) {
    const ids = await readAgentIdsAfter(db, after, pageSize * PAGES_PER_CHUNK);
    if (!ids.length) break;
    await queue(pagesOf(ids, pageSize));
    walked += ids.length;
    if (ids.length < pageSize * PAGES_PER_CHUNK) break;
    after = ids[ids.length - 1] ?? null;
  }
  return walked;
}

export interface FullRecomputeDeps {
  db: Db;
  /** Queues pages of agents (ids ascending within and across pages) whose similar lists to rank and store. */
  queueSimilarPages(pages: string[][]): Promise<void>;
  /** Queues the run's second stage (`finishFullRecompute`), to be taken once every similar page has been. */
  queueDocumentsStage(): Promise<void>;
}

/**
 * Starts the full recompute of every agent's documents: rebuilds every agent's similarity
 * features in one pass, queues every page's similar lists (ranked against the signatures just
 * rebuilt), walking the agents by id a chunk of pages at a time (queued in bulk: queued one by one,
 * the pages already running in the same process slowed the loop to ~13 pages a second at 100k
 * agents), then the stage that recomputes the documents. A score states how many agents list its
 * agent as similar and ranks it against the population's quantiles, so the documents are
 * recomputed once every list of the run is stored: computed in the page that wrote the lists, a
 * second run rewrote nine score documents in ten on a new marketplace. Returns the agents queued
 * and the signature entries written.
 */
export async function startFullRecompute(
  deps: FullRecomputeDeps,
  pageSize: number,
): Promise<{ queued: number; features: number }> {
  // Rebuilding every agent's features takes tens of seconds at 100k agents, over a request's statement timeout.
  const features = await withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, () => rebuildAllFeatures(deps.db));
  const queued = await walkPages(deps.db, pageSize, deps.queueSimilarPages);
  await deps.queueDocumentsStage();
  return { queued, features };
}

export interface FinishFullRecomputeDeps {
  db: Db;
  /** How many similar pages of the run are still running or waiting for a retry. */
  similarPagesInFlight(): Promise<number>;
  /** Recomputes the population quantiles. */
  recomputeQuantiles(): Promise<Record<string, number>>;
  /** Queues pages of agents whose documents to recompute and publish from the stored lists. */
  queueDocumentPages(pages: string[][]): Promise<void>;
}

/** How long the documents stage waits for the last similar pages before it goes on without them. */
export const SIMILAR_PAGES_WAIT_MS = 10 * 60_000;

/**
 * The full recompute's second stage, taken once no similar page of the run is waiting (a lower
 * priority): waits for the similar pages still running (a few, each seconds long; a page waiting
 * for its retry too, up to `waitMs`), recomputes the population quantiles from the lists now
 * stored, then queues every page's documents. Returns how long it waited, whether the last pages
 * were left behind, the quantiles' population sizes and the agents queued.
 */
export async function finishFullRecompute(
  deps: FinishFullRecomputeDeps,
  pageSize: number,
  waitMs = SIMILAR_PAGES_WAIT_MS,
): Promise<{ waitedMs: number; leftBehind: number; population: Record<string, number>; queued: number }> {
  const started = Date.now();
  let inFlight = await deps.similarPagesInFlight();
  while (inFlight > 0 && Date.now() - started < waitMs) {
    await sleep(250);
    inFlight = await deps.similarPagesInFlight();
  }
  const waitedMs = Date.now() - started;
  const population = await deps.recomputeQuantiles();
  const queued = await walkPages(deps.db, pageSize, deps.queueDocumentPages);
  return { waitedMs, leftBehind: inFlight, population, queued };
}
