import { sql } from 'kysely';
import type { Executor } from './db.js';

/** An agent as its feed entry keeps it (`feed_agent_item`, migration 0015): figures as shown. */
export interface AgentFeedItem {
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

/** A skill as its feed entry keeps it (`feed_post_item`, migration 0015). */
export interface PostFeedItem {
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
  /** Absent from entries written before skills were Agent Skills, until the indexer rewrites them. */
  skillName?: string;
  skillDigest?: string | null;
}

/** A feed entry: its item, its feed time (ISO 8601, UTC, microseconds), and for a ranking its rank. */
export interface FeedRow<T> {
  item: T;
  feed_at: string;
  rank?: number;
}

export interface AgentFeedRowsQuery {
  since: string | null;
  cursor: string | null;
  verified: boolean | null;
  sort: 'updated' | 'top';
  /** Rows to read (a page and one more, to know whether there is more). */
  rows: number;
}

// Raw SQL in this file: feed times compared and printed at microseconds (to_char, timestamptz casts of
// text cursors), JSON members of the items, and a rank window over the score index, which Kysely cannot type.
/** The feed time as text with its microseconds, which a JS Date would drop. */
const FEED_AT = sql`to_char(f.feed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * Agent feed entries after max(since, cursor) (compared in SQL, at microseconds), of verified or
 * unverified agents when `verified` says. `updated`: in feed order. `top`: by the item's score,
 * each with its rank among every agent by that score (ties share one), whatever the filters keep.
 */
export async function readAgentFeedRows(db: Executor, q: AgentFeedRowsQuery): Promise<FeedRow<AgentFeedItem>[]> {
  const after = sql`f.feed_at > coalesce(greatest(${q.since}::timestamptz, ${q.cursor}::timestamptz), '-infinity'::timestamptz)`;
  const verified = sql`(${q.verified}::boolean IS NULL OR (f.item->>'tokenId' IS NOT NULL) = ${q.verified}::boolean)`;
  // An entry without an item is waiting for the indexer to move it. Entries go with their agent;
  // the join only covers an agent deleted while the indexer wrote its entry.
  const { rows } =
    q.sort === 'top'
      ? // Ranked while read off the score index (f.score is the item's), so the top page stops early;
        // the rank counts every agent, whatever the filters keep.
        await sql<FeedRow<AgentFeedItem>>`
          SELECT f.item, ${FEED_AT} AS feed_at, f.rank FROM (
            SELECT f.entity_id, f.item, f.feed_at, f.score, rank() OVER (ORDER BY f.score DESC)::int AS rank
            FROM feed_entries f
            WHERE f.kind = 'agent' AND f.score IS NOT NULL) f
          WHERE ${after} AND ${verified} AND EXISTS (SELECT 1 FROM agents a WHERE a.id = f.entity_id)
          ORDER BY f.score DESC, f.item->>'handle'
          LIMIT ${q.rows}`.execute(db)
      : await sql<FeedRow<AgentFeedItem>>`
          SELECT f.item, ${FEED_AT} AS feed_at
          FROM feed_entries f JOIN agents a ON a.id = f.entity_id
          WHERE f.kind = 'agent' AND f.item IS NOT NULL AND ${after} AND ${verified}
          ORDER BY f.feed_at
          LIMIT ${q.rows}`.execute(db);
  return rows;
}

/**
 * Skill feed entries after max(since, cursor), in feed order, at most `rows`. Drafts never appear;
 * an unpublished skill does, with its status.
 */
export async function readPostFeedRows(
  db: Executor,
  q: { since: string | null; cursor: string | null; rows: number },
): Promise<FeedRow<PostFeedItem>[]> {
  const { rows } = await sql<FeedRow<PostFeedItem>>`
    SELECT f.item, ${FEED_AT} AS feed_at
    FROM feed_entries f JOIN posts p ON p.id = f.entity_id
    WHERE f.kind = 'post' AND f.item IS NOT NULL AND f.item->>'status' <> 'draft'
      AND f.feed_at > coalesce(greatest(${q.since}::timestamptz, ${q.cursor}::timestamptz), '-infinity'::timestamptz)
    ORDER BY f.feed_at LIMIT ${q.rows}`.execute(db);
  return rows;
}

/** The newest feed time of each kind, as text ('' for a kind with no entry yet). */
export async function readLatestFeedTimes(db: Executor): Promise<{ agent: string; post: string }> {
  const { rows } = await sql<{ kind: string; v: string | null }>`
    SELECT k.kind, (SELECT max(feed_at)::text FROM feed_entries f WHERE f.kind = k.kind) AS v
    FROM (VALUES ('agent'), ('post')) k(kind)`.execute(db);
  const latest = (kind: string) => rows.find((r) => r.kind === kind)?.v ?? '';
  return { agent: latest('agent'), post: latest('post') };
}
