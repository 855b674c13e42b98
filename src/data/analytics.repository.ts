import { sql } from 'kysely';
import type { Db, Executor } from './db.js';

/** What the paid path counts in memory; sales and refunds are read from the ledger instead. */
export const FUNNEL_KINDS = ['view', 'challenge', 'delivered'] as const;
export type FunnelKind = (typeof FUNNEL_KINDS)[number];

/** Where a request came from, as its own context says (docs/analytics.md#referrer-sources). */
export const SOURCES = ['bazaar', 'mcp', 'pages', 'feeds', 'search', 'direct'] as const;
export type Source = (typeof SOURCES)[number];

/** One counter of one flush: how many times `kind` happened to a skill on a UTC day from a source. */
export interface FunnelCount {
  postId: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  kind: FunnelKind;
  source: Source;
  count: number;
}

/**
 * Adds a flush's counts in one statement, each to its (skill, day, kind, source) row. Counts of a
 * skill that no longer exists are dropped (the join), not an error. Returns the sellers whose
 * skills were counted, so their analytics can be refreshed.
 */
export async function addFunnelCounts(db: Executor, counts: FunnelCount[]): Promise<string[]> {
  if (!counts.length) return [];
  const { rows } = await sql<{ author_id: string }>`
    WITH given AS (
      SELECT * FROM unnest(${counts.map((c) => c.postId)}::uuid[], ${counts.map((c) => c.day)}::date[],
                           ${counts.map((c) => c.kind)}::text[], ${counts.map((c) => c.source)}::text[],
                           ${counts.map((c) => c.count)}::bigint[])
        AS g(post_id, day, kind, source, count)
    ), added AS (
      INSERT INTO skill_funnel_counts AS f (post_id, day, kind, source, count)
      SELECT g.post_id, g.day, g.kind, g.source, sum(g.count)
      FROM given g JOIN posts p ON p.id = g.post_id
      GROUP BY g.post_id, g.day, g.kind, g.source
      ON CONFLICT (post_id, day, kind, source) DO UPDATE SET count = f.count + excluded.count
      RETURNING f.post_id
    )
    SELECT DISTINCT p.author_id FROM added a JOIN posts p ON p.id = a.post_id`.execute(db);
  return rows.map((r) => r.author_id);
}

/** The skills an analytics document covers: the seller's, newest first, at most `limit`. */
export interface SellerSkill {
  id: string;
  title: string;
  status: string;
  price_atomic: string;
}

export async function sellerSkills(db: Executor, agentId: string, limit: number): Promise<SellerSkill[]> {
  const { rows } = await sql<SellerSkill>`
    SELECT id, title, status, price_atomic::text AS price_atomic FROM posts
    WHERE author_id = ${agentId} AND status <> 'draft'
    ORDER BY created_at DESC, id LIMIT ${limit}`.execute(db);
  return rows;
}

/** Per skill, per kind and source, the counted steps since `from` (a UTC day). */
export async function funnelCounts(
  db: Executor,
  postIds: string[],
  from: string,
): Promise<Array<{ post_id: string; kind: FunnelKind; source: Source; count: string }>> {
  if (!postIds.length) return [];
  const { rows } = await sql<{ post_id: string; kind: FunnelKind; source: Source; count: string }>`
    SELECT post_id, kind, source, sum(count)::text AS count FROM skill_funnel_counts
    WHERE post_id = ANY(${postIds}::uuid[]) AND day >= ${from}::date
    GROUP BY post_id, kind, source`.execute(db);
  return rows;
}

/** Per skill, the purchase payments attempted since `from` (claimed authorizations, any outcome). */
export async function attemptsByPost(
  db: Executor,
  postIds: string[],
  from: string,
): Promise<Array<{ post_id: string; attempts: string }>> {
  if (!postIds.length) return [];
  const { rows } = await sql<{ post_id: string; attempts: string }>`
    SELECT post_id, count(*)::text AS attempts FROM payments
    WHERE purpose = 'purchase' AND post_id = ANY(${postIds}::uuid[]) AND created_at >= (${from}::date::timestamp AT TIME ZONE 'UTC')
    GROUP BY post_id`.execute(db);
  return rows;
}

/** The seller's sales of one skill on one UTC day: how many, and their sum. */
export interface DailySales {
  post_id: string;
  day: string;
  sales: string;
  amount_atomic: string;
}

/**
 * The seller's sales (purchases: settled payments) since `from`, summed per skill and UTC day in
 * the database: at most one row per skill and day, however many sales the seller has.
 */
export async function sellerSalesByDay(db: Executor, agentId: string, from: string): Promise<DailySales[]> {
  const { rows } = await sql<DailySales>`
    SELECT post_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
           count(*)::text AS sales, sum(amount_atomic)::text AS amount_atomic
    FROM purchases
    WHERE seller_id = ${agentId} AND created_at >= (${from}::date::timestamp AT TIME ZONE 'UTC')
    GROUP BY 1, 2`.execute(db);
  return rows;
}

/**
 * The distinct buyers of the seller's sales since `from`, and how many of them are new: no purchase
 * from this seller before `from` (the rest bought from it before and came back).
 */
export async function sellerBuyers(
  db: Executor,
  agentId: string,
  from: string,
): Promise<{ total: number; new: number }> {
  const { rows } = await sql<{ total: number; new: number }>`
    WITH since AS (SELECT ${from}::date::timestamp AT TIME ZONE 'UTC' AS at),
    buyers AS (
      SELECT DISTINCT u.buyer_address FROM purchases u, since
      WHERE u.seller_id = ${agentId} AND u.created_at >= since.at
    )
    SELECT count(*)::int AS total,
           count(*) FILTER (WHERE NOT EXISTS (
             SELECT 1 FROM purchases e, since
             WHERE e.buyer_address = b.buyer_address AND e.seller_id = ${agentId} AND e.created_at < since.at
           ))::int AS new
    FROM buyers b`.execute(db);
  return rows[0] ?? { total: 0, new: 0 };
}

/** The seller's refunds settled since `from` (refunded money back to a buyer). */
export async function sellerRefunds(
  db: Executor,
  agentId: string,
  from: string,
): Promise<Array<{ post_id: string; day: string; amount_atomic: string }>> {
  const { rows } = await sql<{ post_id: string; day: string; amount_atomic: string }>`
    SELECT post_id, to_char(coalesce(settled_at, created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
           amount_atomic::text AS amount_atomic
    FROM refunds WHERE seller_id = ${agentId} AND status = 'settled' AND created_at >= (${from}::date::timestamp AT TIME ZONE 'UTC')`.execute(
    db,
  );
  return rows;
}

/** The live ratings of the seller's skills since `from`, by week (weeks start on Monday, UTC). */
export async function sellerRatingsByWeek(
  db: Executor,
  agentId: string,
  from: string,
): Promise<Array<{ week: string; count: string; average: number }>> {
  const { rows } = await sql<{ week: string; count: string; average: number }>`
    SELECT to_char(date_trunc('week', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS week,
           count(*)::text AS count, avg(rating)::float8 AS average
    FROM reviews WHERE seller_id = ${agentId} AND status = 'live' AND created_at >= (${from}::date::timestamp AT TIME ZONE 'UTC')
    GROUP BY 1 ORDER BY 1`.execute(db);
  return rows;
}

/** Stores an agent's analytics document (the job's output), replacing the previous one. */
export async function saveAgentAnalytics(db: Executor, agentId: string, document: object): Promise<void> {
  await sql`
    INSERT INTO agent_analytics (agent_id, document, computed_at)
    VALUES (${agentId}, ${JSON.stringify(document)}::jsonb, now())
    ON CONFLICT (agent_id) DO UPDATE SET document = excluded.document, computed_at = excluded.computed_at`.execute(db);
}

/** An agent's stored analytics document and when it was computed. */
export async function findAgentAnalytics(
  db: Db,
  agentId: string,
): Promise<{ document: Record<string, unknown>; computed_at: Date } | undefined> {
  const { rows } = await sql<{ document: Record<string, unknown>; computed_at: Date }>`
    SELECT document, computed_at FROM agent_analytics WHERE agent_id = ${agentId}`.execute(db);
  return rows[0];
}

/** Forgets counted days older than `before` (a UTC day): the documents read 90 days at most. */
export async function pruneFunnelCounts(db: Executor, postIds: string[], before: string): Promise<void> {
  if (!postIds.length) return;
  await sql`DELETE FROM skill_funnel_counts WHERE post_id = ANY(${postIds}::uuid[]) AND day < ${before}::date`.execute(
    db,
  );
}
