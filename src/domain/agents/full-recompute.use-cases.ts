import { readAgentIdsAfter } from '../../data/agents.repository.js';
import { BATCH_STATEMENT_TIMEOUT_MS, type Db, withStatementTimeout } from '../../data/db.js';
import {
  countSimilarPagesLeft,
  forgetOldRecomputeRuns,
  planSimilarPages,
  recordSimilarPageDone,
} from '../../data/recompute.repository.js';
import { rankSimilarPage, rebuildAllFeatures } from './similar.js';
import { signatureSnapshot } from './signature-loaders.js';

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
  /** The run's label: its similar pages are planned and recorded done under it. */
  run: string;
  /** Queues pages of agents (ids ascending within and across pages) whose similar lists to rank and store. */
  queueSimilarPages(pages: string[][]): Promise<void>;
  /** Queues the run's second stage (`finishFullRecompute`). */
  queueDocumentsStage(): Promise<void>;
}

/** Days a run's record of its similar pages is kept. */
const RUN_RECORDS_KEPT_DAYS = 2;

/**
 * Starts the full recompute of every agent's documents: rebuilds every agent's similarity
 * features in one pass, queues every page's similar lists (ranked against the signatures just
 * rebuilt), walking the agents by id a chunk of pages at a time (queued in bulk: queued one by one,
 * the pages already running in the same process slowed the loop to ~13 pages a second at 100k
 * agents), then the stage that recomputes the documents. A score states how many agents list its
 * agent as similar and ranks it against the population's quantiles, so the documents are
 * recomputed once every list of the run is stored: computed in the page that wrote the lists, a
 * second run rewrote nine score documents in ten on a new marketplace. The rebuild is left out
 * when nothing the features are derived from changed since the last one (`rebuildAllFeatures`).
 * Returns the agents queued, the signature entries (written, or as they stand), whether they were
 * rebuilt, and the similar pages queued.
 */
export async function startFullRecompute(
  deps: FullRecomputeDeps,
  pageSize: number,
): Promise<{ queued: number; features: number; featuresRebuilt: boolean; similarPages: number }> {
  await forgetOldRecomputeRuns(deps.db, RUN_RECORDS_KEPT_DAYS);
  // Rebuilding every agent's features takes tens of seconds at 100k agents, over a request's statement timeout.
  const rebuild = await withStatementTimeout(BATCH_STATEMENT_TIMEOUT_MS, () => rebuildAllFeatures(deps.db));
  let similarPages = 0;
  const queued = await walkPages(deps.db, pageSize, async (pages) => {
    similarPages += pages.length;
    // Planned before they are queued: the second stage waits for every planned page, including
    // those of an earlier attempt of this run whose pages began at other agents.
    await planSimilarPages(
      deps.db,
      deps.run,
      pages.flatMap((p) => p.slice(0, 1)),
    );
    await deps.queueSimilarPages(pages);
  });
  await deps.queueDocumentsStage();
  return { queued, features: rebuild.signatures, featuresRebuilt: rebuild.rebuilt, similarPages };
}

/**
 * Ranks and stores a page's similar lists, then records the page done for its run. Returns the
 * agents ranked and those whose stored list came from the same snapshot, left as they are.
 */
export async function recomputeSimilarPageOfRun(
  db: Db,
  agentIds: string[],
  run: string | undefined,
): Promise<{ ranked: number; kept: number }> {
  // Ranked against the worker's snapshot of the signatures the run just rebuilt.
  const outcome = await rankSimilarPage(db, agentIds, await signatureSnapshot(db));
  const first = agentIds[0];
  if (run !== undefined && first !== undefined) await recordSimilarPageDone(db, run, first);
  return outcome;
}

export interface FinishFullRecomputeDeps {
  db: Db;
  /** Recomputes the population quantiles. */
  recomputeQuantiles(): Promise<Record<string, number>>;
  /** Queues pages of agents whose documents to recompute and publish from the stored lists. */
  queueDocumentPages(pages: string[][]): Promise<void>;
}

/** How long after it was queued the documents stage waits for the last similar pages before it goes on without them. */
export const SIMILAR_PAGES_WAIT_MS = 30 * 60_000;

/**
 * The full recompute's second stage. Until every similar page the run planned is recorded done (or
 * `waitMs` after the stage was queued, `since`), answers `{ waiting }` and does nothing: its job
 * runs again a moment later, without holding a worker meanwhile. Then recomputes the population
 * quantiles from the lists now stored and queues every page's documents. Returns the pages left
 * behind (failed for good, or still running when the wait ended), the quantiles' population
 * sizes and the agents queued.
 */
export async function finishFullRecompute(
  deps: FinishFullRecomputeDeps,
  run: { name: string; since: number },
  pageSize: number,
  now = Date.now(),
  waitMs = SIMILAR_PAGES_WAIT_MS,
): Promise<{ waiting: number } | { leftBehind: number; population: Record<string, number>; queued: number }> {
  const left = await countSimilarPagesLeft(deps.db, run.name);
  if (left > 0 && now - run.since < waitMs) return { waiting: left };
  const population = await deps.recomputeQuantiles();
  const queued = await walkPages(deps.db, pageSize, deps.queueDocumentPages);
  return { leftBehind: left, population, queued };
}
