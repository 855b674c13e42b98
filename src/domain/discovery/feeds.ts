import { getAddress } from 'viem';
import type { Db } from '../../data/db.js';
import {
  readAgentFeedRows,
  readLatestFeedTimes,
  readPostFeedRows,
  type AgentFeedItem,
  type FeedRow,
  type PostFeedItem,
} from '../../data/projections.repository.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { agentLinks } from '../../documents/agent/agent-card.renderer.js';

/** Where polling starts when nothing has been seen yet: the beginning of the feed. */
export const FEED_START = '1970-01-01T00:00:00.000000Z';

export interface FeedPage<T> {
  items: T[];
  /** Pass as `cursor` for the next page; null at the end of the feed. */
  nextCursor: string | null;
  /** After walking to the end, poll with `since` set to this. */
  nextSince: string | null;
  hasMore: boolean;
}

export interface AgentFeedQuery {
  since?: string;
  cursor?: string;
  verified?: boolean;
  sort: 'updated' | 'top';
  limit: number;
}

/**
 * Everything but updatedAt and links comes from the item the entry keeps, so the bytes served at
 * a feed position never change; what is added is derived from the item alone. Only a ranking
 * (`sort=top`) gives a rank.
 */
const agentItem = ({ item: i, feed_at, rank }: FeedRow<AgentFeedItem>, site: SiteInfo) => ({
  handle: i.handle,
  displayName: i.displayName,
  walletAddress: getAddress(i.walletAddress),
  tokenId: i.tokenId,
  verified: i.tokenId !== null,
  score: i.score,
  rawScore: i.rawScore,
  health: i.health,
  ...(rank === undefined ? {} : { rank }),
  publishedSkills: i.publishedSkills,
  uniqueBuyers90d: i.uniqueBuyers90d,
  revenueUsdc90d: i.revenueUsdc90d,
  // A suspended agent's entry is a tombstone: a mirror drops its copy.
  status: i.status ?? 'active',
  ...(i.suspension
    ? { removal: { reason: i.suspension.reason, at: i.suspension.at, action: i.suspension.action } }
    : {}),
  updatedAt: feed_at,
  links: (({ agentCard, score }) => ({ agentCard, score }))(agentLinks(site.baseUrl, i.handle)),
});

/**
 * The agent feed. `sort=updated` (default) is delta-pollable: entries in feed order after
 * max(since, cursor), each as its entry keeps it. `sort=top` ranks by the score the feed shows
 * (optionally among agents changed since `since`), with each agent's rank among all agents by
 * that score (ties share one); it is a ranking, not a delta feed, so it takes no cursor, and it is
 * the only form with a rank (docs/decisions/0009-feed-items-never-change-in-place.md).
 */
export async function agentFeed(
  db: Db,
  site: SiteInfo,
  q: AgentFeedQuery,
): Promise<FeedPage<ReturnType<typeof agentItem>>> {
  const since = q.since ?? null;
  const cursor = q.cursor ?? null;
  const rows = await readAgentFeedRows(db, {
    since,
    cursor,
    verified: q.verified ?? null,
    sort: q.sort,
    rows: q.limit + 1,
  });
  const page = rows.slice(0, q.limit);
  const hasMore = rows.length > q.limit;
  const last = page.at(-1)?.feed_at ?? null;
  return {
    items: page.map((r) => agentItem(r, site)),
    nextCursor: q.sort === 'updated' && hasMore ? last : null,
    nextSince: q.sort === 'updated' ? (last ?? cursor ?? since ?? FEED_START) : null,
    hasMore,
  };
}

const postItem = ({ item: i, feed_at }: FeedRow<PostFeedItem>, site: SiteInfo) => ({
  id: i.id,
  title: i.title,
  preview: i.preview,
  status: i.status,
  author: { handle: i.author.handle },
  priceAtomic: i.priceAtomic,
  tags: i.tags,
  oasfSkills: i.oasfSkills,
  oasfDomains: i.oasfDomains,
  version: i.version,
  // The Agent Skill name and the skill digest of the current version (its files' digests are in the full view).
  name: i.skillName ?? null,
  skillDigest: i.skillDigest ?? null,
  audit: i.audit ?? 'pending',
  // A removed skill's entry is a tombstone (status "removed"): a mirror drops its copy.
  ...(i.removal ? { removal: { reason: i.removal.reason, at: i.removal.at, action: i.removal.action } } : {}),
  publishedAt: i.publishedAt,
  updatedAt: feed_at,
  links: { manifest: `${site.baseUrl}/api/posts/${i.id}/manifest.json`, preview: `${site.baseUrl}/api/posts/${i.id}` },
});

/**
 * The skill feed, delta-pollable the same way, each skill as its entry keeps it. Drafts never
 * appear; an unpublished skill appears with its status so mirrors drop it.
 */
export async function postFeed(
  db: Db,
  site: SiteInfo,
  q: { since?: string; cursor?: string; limit: number },
): Promise<FeedPage<ReturnType<typeof postItem>>> {
  const since = q.since ?? null;
  const cursor = q.cursor ?? null;
  const rows = await readPostFeedRows(db, { since, cursor, rows: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  const hasMore = rows.length > q.limit;
  const last = page.at(-1)?.feed_at ?? null;
  return {
    items: page.map((r) => postItem(r, site)),
    nextCursor: hasMore ? last : null,
    nextSince: last ?? cursor ?? since ?? FEED_START,
    hasMore,
  };
}

/**
 * The newest feed time of each kind ('' before its first entry): a page of a kind is the same for
 * as long as this is.
 */
export async function latestFeedVersions(db: Db): Promise<{ agent: string; post: string }> {
  return readLatestFeedTimes(db);
}
