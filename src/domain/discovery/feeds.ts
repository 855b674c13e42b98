import { sql } from 'kysely';
import { getAddress } from 'viem';
import type { Db } from '../../data/db.js';
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

/** An agent as its feed entry keeps it (`feed_agent_item`, migration 0015): figures as shown. */
interface AgentFeedItem {
  handle: string;
  displayName: string | null;
  walletAddress: string;
  tokenId: string | null;
  score: number;
  rawScore: number;
  health: string;
  publishedSkills: number;
  uniqueBuyers90d: number;
  revenueUsdc90d: number;
}

interface AgentRow {
  item: AgentFeedItem;
  feed_at: string;
  rank?: number;
}

/**
 * Everything but updatedAt and links comes from the item the entry keeps, so the bytes served at
 * a feed position never change; what is added is derived from the item alone. Only a ranking
 * (`sort=top`) gives a rank.
 */
const agentItem = ({ item: i, feed_at, rank }: AgentRow, site: SiteInfo) => ({
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
  // Compared in SQL: the times carry microseconds, which a JS Date would drop.
  const since = q.since ?? null;
  const cursor = q.cursor ?? null;
  const after = sql`f.feed_at > coalesce(greatest(${since}::timestamptz, ${cursor}::timestamptz), '-infinity'::timestamptz)`;
  const verified = sql`(${q.verified ?? null}::boolean IS NULL OR (f.item->>'tokenId' IS NOT NULL) = ${q.verified ?? null}::boolean)`;
  const feedAt = sql`to_char(f.feed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
  // An entry without an item is waiting for the indexer to move it. Entries go with their agent;
  // the join only covers an agent deleted while the indexer wrote its entry.
  const rows =
    q.sort === 'top'
      ? // Ranked while read off the score index (f.score is the item's), so the top page stops early;
        // the rank counts every agent, whatever the filters keep.
        await sql<AgentRow>`
          SELECT f.item, ${feedAt} AS feed_at, f.rank FROM (
            SELECT f.entity_id, f.item, f.feed_at, f.score, rank() OVER (ORDER BY f.score DESC)::int AS rank
            FROM feed_entries f
            WHERE f.kind = 'agent' AND f.score IS NOT NULL) f
          WHERE ${after} AND ${verified} AND EXISTS (SELECT 1 FROM agents a WHERE a.id = f.entity_id)
          ORDER BY f.score DESC, f.item->>'handle'
          LIMIT ${q.limit + 1}`.execute(db)
      : await sql<AgentRow>`
          SELECT f.item, ${feedAt} AS feed_at
          FROM feed_entries f JOIN agents a ON a.id = f.entity_id
          WHERE f.kind = 'agent' AND f.item IS NOT NULL AND ${after} AND ${verified}
          ORDER BY f.feed_at
          LIMIT ${q.limit + 1}`.execute(db);
  const page = rows.rows.slice(0, q.limit);
  const hasMore = rows.rows.length > q.limit;
  const last = page.at(-1)?.feed_at ?? null;
  return {
    items: page.map((r) => agentItem(r, site)),
    nextCursor: q.sort === 'updated' && hasMore ? last : null,
    nextSince: q.sort === 'updated' ? (last ?? cursor ?? since ?? FEED_START) : null,
    hasMore,
  };
}

/** A skill as its feed entry keeps it (`feed_post_item`, migration 0015). */
interface PostFeedItem {
  id: string;
  title: string;
  preview: string;
  status: string;
  author: { handle: string };
  priceAtomic: string;
  tags: string[];
  oasfSkills: string[];
  oasfDomains: string[];
  version: number;
  publishedAt: string | null;
}

interface PostRow {
  item: PostFeedItem;
  feed_at: string;
}

const postItem = ({ item: i, feed_at }: PostRow, site: SiteInfo) => ({
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
  const rows = await sql<PostRow>`
    SELECT f.item, to_char(f.feed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS feed_at
    FROM feed_entries f JOIN posts p ON p.id = f.entity_id
    WHERE f.kind = 'post' AND f.item IS NOT NULL AND f.item->>'status' <> 'draft'
      AND f.feed_at > coalesce(greatest(${since}::timestamptz, ${cursor}::timestamptz), '-infinity'::timestamptz)
    ORDER BY f.feed_at LIMIT ${q.limit + 1}`.execute(db);
  const page = rows.rows.slice(0, q.limit);
  const hasMore = rows.rows.length > q.limit;
  const last = page.at(-1)?.feed_at ?? null;
  return {
    items: page.map((r) => postItem(r, site)),
    nextCursor: hasMore ? last : null,
    nextSince: last ?? cursor ?? since ?? FEED_START,
    hasMore,
  };
}
