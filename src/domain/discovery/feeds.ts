import { sql } from 'kysely';
import { getAddress } from 'viem';
import type { Db } from '../../data/db.js';
import type { SiteInfo } from '../site.js';
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

interface AgentRow {
  id: string;
  handle: string;
  display_name: string | null;
  wallet_address: string;
  token_id: string | null;
  score: number | null;
  raw_score: number | null;
  health_status: string | null;
  rank: number | null;
  published_skills: number | null;
  unique_buyers_90d: number | null;
  revenue_atomic_90d: string | null;
  feed_at: string;
}

const agentItem = (r: AgentRow, site: SiteInfo) => ({
  handle: r.handle,
  displayName: r.display_name,
  walletAddress: getAddress(r.wallet_address),
  tokenId: r.token_id,
  verified: r.token_id !== null,
  score: r.score ?? 0,
  rawScore: r.raw_score ?? 0,
  health: r.health_status ?? 'dormant',
  rank: r.rank,
  publishedSkills: r.published_skills ?? 0,
  uniqueBuyers90d: r.unique_buyers_90d ?? 0,
  revenueUsdc90d: Number(r.revenue_atomic_90d ?? '0') / 1e6,
  updatedAt: r.feed_at,
  links: (({ agentCard, score }) => ({ agentCard, score }))(agentLinks(site.baseUrl, r.handle)),
});

/**
 * The agent feed. `sort=updated` (default) is delta-pollable: entries in feed order after
 * max(since, cursor). `sort=top` ranks by score (optionally among agents changed since `since`);
 * it is a ranking, not a delta feed, so it takes no cursor.
 */
export async function agentFeed(db: Db, site: SiteInfo, q: AgentFeedQuery): Promise<FeedPage<ReturnType<typeof agentItem>>> {
  // Compared in SQL: the times carry microseconds, which a JS Date would drop.
  const since = q.since ?? null;
  const cursor = q.cursor ?? null;
  const rows = await sql<AgentRow>`
    SELECT a.id, a.handle, a.display_name, a.wallet_address, a.token_id::text AS token_id,
           m.score, m.raw_score, m.health_status, m.rank, m.published_skills, m.unique_buyers_90d, m.revenue_atomic_90d::text AS revenue_atomic_90d,
           to_char(f.feed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS feed_at
    FROM feed_entries f
    JOIN agents a ON a.id = f.entity_id
    LEFT JOIN agent_metrics m ON m.agent_id = a.id
    WHERE f.kind = 'agent'
      AND f.feed_at > coalesce(greatest(${since}::timestamptz, ${cursor}::timestamptz), '-infinity'::timestamptz)
      AND (${q.verified ?? null}::boolean IS NULL OR (a.token_id IS NOT NULL) = ${q.verified ?? null}::boolean)
    ORDER BY ${q.sort === 'top' ? sql`coalesce(m.score, 0) DESC, a.handle` : sql`f.feed_at`}
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

interface PostRow {
  id: string;
  title: string;
  preview: string;
  status: string;
  price_atomic: string;
  tags: string[];
  oasf_skills: string[];
  oasf_domains: string[];
  current_version: number;
  published_at: Date | null;
  handle: string;
  feed_at: string;
}

const postItem = (r: PostRow, site: SiteInfo) => ({
  id: r.id,
  title: r.title,
  preview: r.preview,
  status: r.status,
  author: { handle: r.handle },
  priceAtomic: r.price_atomic,
  tags: r.tags,
  oasfSkills: r.oasf_skills,
  oasfDomains: r.oasf_domains,
  version: r.current_version,
  publishedAt: r.published_at?.toISOString() ?? null,
  updatedAt: r.feed_at,
  links: { manifest: `${site.baseUrl}/api/posts/${r.id}/manifest.json`, preview: `${site.baseUrl}/api/posts/${r.id}` },
});

/**
 * The skill feed, delta-pollable the same way. Drafts never appear; an unpublished skill appears
 * with its status so mirrors drop it.
 */
export async function postFeed(db: Db, site: SiteInfo, q: { since?: string; cursor?: string; limit: number }): Promise<FeedPage<ReturnType<typeof postItem>>> {
  const since = q.since ?? null;
  const cursor = q.cursor ?? null;
  const rows = await sql<PostRow>`
    SELECT p.id, p.title, p.preview, p.status, p.price_atomic::text AS price_atomic, p.tags, p.oasf_skills, p.oasf_domains,
           p.current_version, p.published_at, a.handle,
           to_char(f.feed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS feed_at
    FROM feed_entries f JOIN posts p ON p.id = f.entity_id JOIN agents a ON a.id = p.author_id
    WHERE f.kind = 'post' AND p.status <> 'draft'
      AND f.feed_at > coalesce(greatest(${since}::timestamptz, ${cursor}::timestamptz), '-infinity'::timestamptz)
    ORDER BY f.feed_at LIMIT ${q.limit + 1}`.execute(db);
  const page = rows.rows.slice(0, q.limit);
  const hasMore = rows.rows.length > q.limit;
  const last = page.at(-1)?.feed_at ?? null;
  return { items: page.map((r) => postItem(r, site)), nextCursor: hasMore ? last : null, nextSince: last ?? cursor ?? since ?? FEED_START, hasMore };
}
