import type { Db, Executor } from '../../data/db.js';
import {
  clearSearchTier,
  atLeastPublishedSkills,
  lockSearchTierRebuild,
  readOldestRunningTransaction,
  recopyChangedSkillsIntoSearchTier,
  swapInNextSearchTier,
  writeNextSearchTier,
  writeSearchTierEntry,
} from '../../data/search-tier.repository.js';

/**
 * The search tier (`search_tier_posts`): the search vectors of the skills a search should find
 * first, with their own GIN index. Intersecting two common words over a million skills reads two
 * posting lists of tens of thousands of entries (4-5 ms of PostgreSQL CPU a search); over the
 * tier, a tenth of that. A search ranks the tier's matches when they are enough to fill its page
 * and goes to the full index only when they are not, which is then cheap, as the words are rare
 * (docs/discovery.md, decision 0008).
 */
export const SEARCH_TIER = {
  /** Skills the tier holds. */
  size: 100_000,
  /** Below this many published skills the full index is cheap enough and the tier stays empty. */
  minimumPublished: 200_000,
  /** Skills published this recently come first, so new listings are found by their common words too. */
  recentDays: 7,
  /** Then the skills with the most paid sales over this window. */
  salesDays: 90,
} as const;

/** How long the swap waits for searches still reading the old tier before giving up for this round. */
const SWAP_LOCK_TIMEOUT_MS = 2000;
/** SQLSTATE lock_not_available: the swap's lock_timeout ran out. */
const LOCK_NOT_AVAILABLE = '55P03';
const DAY_MS = 86_400_000;

const sqlStateOf = (err: unknown): unknown =>
  typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;

/**
 * Rebuilds the tier: the skills published in the last 7 days, then those with the most paid sales
 * in 90 days, then the newest, up to `size`. Built beside the live table (searches go on with the
 * old tier) and swapped in at the end of one transaction, under an advisory lock so two rebuilds
 * never interleave. Skills published, edited or unpublished while it was being built are copied
 * again after the swap, found by their `change_txid`. The swap waits at most `SWAP_LOCK_TIMEOUT_MS`
 * for searches holding the old table; if that runs out, the old tier is kept (returns null) and the
 * next rebuild tries again. Empties the tier when the marketplace is below `minimumPublished`.
 * Returns the skills the new tier holds.
 */
export async function refreshSearchTier(
  db: Db,
  opts: { size?: number; minimumPublished?: number; now?: Date } = {},
): Promise<number | null> {
  const size = opts.size ?? SEARCH_TIER.size;
  const minimum = opts.minimumPublished ?? SEARCH_TIER.minimumPublished;
  const now = opts.now ?? new Date();
  try {
    return await db.transaction().execute(async (trx) => {
      await lockSearchTierRebuild(trx);
      if (!(await atLeastPublishedSkills(trx, minimum))) {
        await clearSearchTier(trx);
        return 0;
      }
      const since = await readOldestRunningTransaction(trx);
      const written = await writeNextSearchTier(trx, {
        size,
        recentSince: new Date(now.getTime() - SEARCH_TIER.recentDays * DAY_MS),
        salesSince: new Date(now.getTime() - SEARCH_TIER.salesDays * DAY_MS),
      });
      await swapInNextSearchTier(trx, SWAP_LOCK_TIMEOUT_MS);
      // What changed meanwhile went into the old table, or was not committed when the copy read.
      await recopyChangedSkillsIntoSearchTier(trx, since);
      return written;
    });
  } catch (err) {
    if (sqlStateOf(err) === LOCK_NOT_AVAILABLE) return null;
    throw err;
  }
}

/**
 * Keeps one skill's place in the tier current, in the transaction that changed it: a skill just
 * published or edited joins it (with its current vector), so it is found by its common words before
 * the next rebuild; an unpublished one leaves it. Nothing joins while the tier is empty. The tier is
 * part of the search index: like the GIN index on posts, a failure here fails the change.
 */
export async function syncSearchTier(db: Executor, postId: string): Promise<void> {
  await writeSearchTierEntry(db, postId);
}
