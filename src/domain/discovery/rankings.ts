import type { Db } from '../../data/db.js';
import {
  readCategoryCounts,
  readCategoryTopTags,
  readTopSellersSince,
  readSnapshot,
  readTrendingTags,
  refreshTagStats,
  saveSnapshot,
  type SellerSales,
} from '../../data/scoring.repository.js';
import { refreshSearchVocabulary } from '../../data/search.repository.js';
import { wilsonLower } from '../scoring/score.js';
import { DECIMALS, roundTo, WILSON_Z } from '../scoring/methodology.js';
import { refreshSearchTier } from './search-tier.js';

export const TRENDING_WINDOW_HOURS = 72;
export const TAG_WINDOW_DAYS = 7;
/** Tag trend weights: a paid purchase says more about demand than a new (free to read) listing. */
export const TAG_WEIGHTS = { paidPurchase: 3, published: 1 } as const;
/** Agents and tags a ranking shows. */
const RANKED = 100;

/**
 * Trending agents: sales velocity over the last 72 hours (sales per hour) weighted by the Wilson
 * lower bound (z = 1.96) of buyer diversity (distinct buyers / sales), so one wallet buying a
 * hundred times does not trend. trend = (sales72h / 72) x wilson(buyers72h, sales72h). The best
 * 100, ranked from 1; ties by handle.
 */
export function rankTrendingAgents(sales: SellerSales[]) {
  return sales
    .map((r) => {
      const velocity = r.sales / TRENDING_WINDOW_HOURS;
      const diversity = wilsonLower(r.buyers, r.sales);
      return {
        handle: r.handle,
        displayName: r.display_name,
        sales72h: r.sales,
        buyers72h: r.buyers,
        revenueUsdc72h: Number(r.revenue) / 1e6,
        velocityPerHour: velocity,
        buyerDiversity: diversity,
        trendScore: velocity * diversity,
      };
    })
    .sort((a, b) => b.trendScore - a.trendScore || a.handle.localeCompare(b.handle))
    .slice(0, RANKED)
    .map((x, i) => ({
      rank: i + 1,
      ...x,
      // Ranked on the exact figures, published to the methodology's decimals.
      velocityPerHour: roundTo(x.velocityPerHour, DECIMALS.fractions),
      buyerDiversity: roundTo(x.buyerDiversity, DECIMALS.fractions),
      trendScore: roundTo(x.trendScore, DECIMALS.fractions),
    }));
}

type CategoryFamily = Record<string, Record<string, { posts: number; agents: number }>>;
type CategoryTopTags = Record<string, Record<string, Array<{ tag: string; posts: number }>>>;

/**
 * The category counts document: per family (`skills`, `domains`) the published skills and agents
 * of every category path, and the 5 most used tags of each tagged category (what depth 4 of the
 * categories document shows under the deepest categories).
 */
export function categoryCounts(
  counted: Array<{ family: string; prefix: string; posts: number; agents: number }>,
  top: Array<{ family: string; path: string; tag: string; n: number }>,
): { counts: CategoryFamily; topTags: CategoryTopTags } {
  const counts: CategoryFamily = { skills: {}, domains: {} };
  for (const r of counted) {
    const family = counts[r.family] ?? {};
    counts[r.family] = family;
    family[r.prefix] = { posts: r.posts, agents: r.agents };
  }
  const topTags: CategoryTopTags = { skills: {}, domains: {} };
  for (const r of top) {
    const family = topTags[r.family] ?? {};
    topTags[r.family] = family;
    const tags = family[r.path] ?? [];
    family[r.path] = tags;
    tags.push({ tag: r.tag, posts: r.n });
  }
  return { counts, topTags };
}

export type CategoryCountsDoc = ReturnType<typeof categoryCounts>;

/**
 * Recomputes the discovery rankings and writes them: the trending agents, `tag_stats` and the
 * trending tags, and the category counts (each a snapshot), then rebuilds the search vocabulary
 * and the search tier from the same marketplace.
 */
export async function recomputeAndStoreRankings(db: Db, now = new Date()) {
  // Load and decide.
  // The candidates only (ten times the ranked), by the same order computed in the database.
  const trend = rankTrendingAgents(
    await readTopSellersSince(db, new Date(now.getTime() - TRENDING_WINDOW_HOURS * 3_600_000), RANKED * 10, WILSON_Z),
  );
  await refreshTagStats(db, new Date(now.getTime() - TAG_WINDOW_DAYS * 86_400_000), TAG_WEIGHTS);
  const tagTop = await readTrendingTags(db, RANKED);
  const cats = categoryCounts(await readCategoryCounts(db), await readCategoryTopTags(db));
  // Save.
  await saveSnapshot(db, 'trending', { windowHours: TRENDING_WINDOW_HOURS, wilsonZ: WILSON_Z, agents: trend }, now);
  await saveSnapshot(
    db,
    'tags',
    {
      windowDays: TAG_WINDOW_DAYS,
      weights: TAG_WEIGHTS,
      tags: tagTop.map((t) => ({ tag: t.tag, posts: t.posts, score7d: t.score_7d })),
    },
    now,
  );
  await saveSnapshot(db, 'categories', cats, now);
  const vocabulary = await refreshSearchVocabulary(db);
  const searchTier = await refreshSearchTier(db, { now });
  return { trending: trend.length, tags: tagTop.length, vocabulary, searchTier };
}

/**
 * The stored snapshot `name` as the document type its writer gave it (this module writes each one
 * above), with when it was computed; undefined before the first recompute.
 */
export async function snapshot<T>(db: Db, name: string): Promise<{ document: T; computedAt: string } | undefined> {
  const row = await readSnapshot(db, name);
  return row ? { document: row.document as T, computedAt: row.computedAt.toISOString() } : undefined;
}
