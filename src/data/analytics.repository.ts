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

/**
 * The last day of the seller's sealed days (`sealSellerDays`), as SQL: before any seal, a day
 * before every day, so every read below takes all of its days from the ledger.
 */
const sealedThrough = (agentId: string) =>
  sql`coalesce((SELECT through FROM seller_analytics_sealed WHERE seller_id = ${agentId}), '-infinity'::date)`;

/** The first instant a read takes from the ledger: `from` or the day after the sealed ones, if later. */
const ledgerFrom = (agentId: string, from: string) =>
  sql`(greatest(${from}::date, ${sealedThrough(agentId)} + 1)::timestamp AT TIME ZONE 'UTC')`;

/** Days summed per sealing statement, so a long history is sealed in statements of bounded size. */
export const SEAL_CHUNK_DAYS = 31;

/**
 * Sums the seller's next days after its last sealed day, at most SEAL_CHUNK_DAYS of them and none
 * after `through` (a UTC day no purchase or payment can still be dated: the job passes two days
 * back), into the sealed-day tables, in one statement. A seller never sealed starts at its first
 * sale (or `keepFrom`, if earlier). Sales and attempts days before `keepFrom` are not written (no
 * window reads them); every buyer is. Returns whether days up to `through` are left to seal.
 * Idempotent: a day's row is written whole, a buyer's first and last days only widen, so two jobs
 * sealing at once write the same rows.
 */
export async function sealSellerDays(
  db: Executor,
  agentId: string,
  through: string,
  keepFrom: string,
): Promise<boolean> {
  // A seller never sealed (or whose seal was deleted, to sum its history again) starts from no rows.
  for (const table of ['seller_buyers', 'seller_sales_days'] as const)
    await sql`
      DELETE FROM ${sql.table(table)} WHERE seller_id = ${agentId}
        AND NOT EXISTS (SELECT 1 FROM seller_analytics_sealed WHERE seller_id = ${agentId})`.execute(db);
  const { rows } = await sql<{ left: boolean }>`
    WITH start AS (
      SELECT CASE WHEN was > '-infinity' THEN was + 1 ELSE least(${keepFrom}::date,
               (SELECT (min(created_at) AT TIME ZONE 'UTC')::date FROM purchases WHERE seller_id = ${agentId})) END AS d
      FROM (SELECT ${sealedThrough(agentId)} AS was) s),
    -- Never a day the database's own clock does not put two days back: a caller's clock ahead of
    -- it would seal days still to come as empty.
    upto AS (SELECT least(${through}::date, (now() AT TIME ZONE 'UTC')::date - 2) AS through),
    range AS (
      SELECT (d::timestamp AT TIME ZONE 'UTC') AS lo, least(d + ${SEAL_CHUNK_DAYS - 1}::int, u.through) AS upto
      FROM start, upto u WHERE d <= u.through),
    bounds AS (SELECT lo, ((upto + 1)::timestamp AT TIME ZONE 'UTC') AS hi, upto FROM range),
    sold AS (
      SELECT u.post_id, (u.created_at AT TIME ZONE 'UTC')::date AS day, u.buyer_address, u.amount_atomic
      FROM purchases u, bounds r WHERE u.seller_id = ${agentId} AND u.created_at >= r.lo AND u.created_at < r.hi),
    sales AS (
      SELECT post_id, day, count(*) AS sales, sum(amount_atomic) AS amount_atomic FROM sold
      WHERE day >= ${keepFrom}::date GROUP BY post_id, day),
    tried AS (
      SELECT p.post_id, (p.created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS attempts
      FROM payments p, bounds r
      WHERE p.purpose = 'purchase' AND p.post_id IN (SELECT id FROM posts WHERE author_id = ${agentId})
        AND p.created_at >= greatest(r.lo, ${keepFrom}::date::timestamp AT TIME ZONE 'UTC') AND p.created_at < r.hi
      GROUP BY 1, 2),
    days AS (
      INSERT INTO seller_sales_days AS d (seller_id, day, post_id, sales, amount_atomic, attempts)
      SELECT ${agentId}, day, post_id, coalesce(sales.sales, 0), coalesce(sales.amount_atomic, 0), coalesce(tried.attempts, 0)
      FROM sales FULL JOIN tried USING (post_id, day) ORDER BY day, post_id
      ON CONFLICT (seller_id, day, post_id) DO UPDATE
      SET sales = excluded.sales, amount_atomic = excluded.amount_atomic, attempts = excluded.attempts),
    buyers AS (
      INSERT INTO seller_buyers AS b (seller_id, buyer_address, first_day, last_day)
      SELECT ${agentId}, buyer_address, min(day), max(day) FROM sold GROUP BY buyer_address ORDER BY buyer_address
      ON CONFLICT (seller_id, buyer_address) DO UPDATE
      SET first_day = least(b.first_day, excluded.first_day), last_day = greatest(b.last_day, excluded.last_day))
    INSERT INTO seller_analytics_sealed AS s (seller_id, through) SELECT ${agentId}, upto FROM bounds
    ON CONFLICT (seller_id) DO UPDATE SET through = greatest(s.through, excluded.through)
    RETURNING through < (SELECT through FROM upto) AS left`.execute(db);
  return rows[0]?.left ?? false;
}

/**
 * Takes the seller's sealing lock for the rest of the transaction, if no other transaction holds
 * it: a burst of sales runs several analytics jobs at once, and each would sum the same history.
 */
export async function trySealLock(trx: Executor, agentId: string): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`
    SELECT pg_try_advisory_xact_lock(hashtextextended(${`analytics-seal:${agentId}`}, 8004)) AS ok`.execute(trx);
  return rows[0]?.ok === true;
}

/** Forgets the seller's sealed sales days older than `before` (a UTC day). */
export async function pruneSellerDays(db: Executor, agentId: string, before: string): Promise<void> {
  await sql`DELETE FROM seller_sales_days WHERE seller_id = ${agentId} AND day < ${before}::date`.execute(db);
}

/**
 * Per skill of the seller's given, the purchase payments attempted since `from` (claimed
 * authorizations, any outcome): its sealed days' counts, and the ledger's after them.
 */
export async function attemptsByPost(
  db: Executor,
  agentId: string,
  postIds: string[],
  from: string,
): Promise<Array<{ post_id: string; attempts: string }>> {
  if (!postIds.length) return [];
  const { rows } = await sql<{ post_id: string; attempts: string }>`
    SELECT post_id, sum(n)::text AS attempts FROM (
      SELECT post_id, attempts AS n FROM seller_sales_days
      WHERE seller_id = ${agentId} AND day >= ${from}::date AND day <= ${sealedThrough(agentId)} AND post_id = ANY(${postIds}::uuid[])
      UNION ALL
      SELECT post_id, count(*) FROM payments
      WHERE purpose = 'purchase' AND post_id = ANY(${postIds}::uuid[]) AND created_at >= ${ledgerFrom(agentId, from)}
      GROUP BY post_id) a
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
 * The seller's sales (purchases: settled payments) since `from`, summed per skill and UTC day: its
 * sealed days' sums, and the ledger's days after them. At most one row per skill and day, however
 * many sales the seller has, and only the unsealed days' sales are read.
 */
export async function sellerSalesByDay(db: Executor, agentId: string, from: string): Promise<DailySales[]> {
  const { rows } = await sql<DailySales>`
    SELECT post_id, to_char(day, 'YYYY-MM-DD') AS day, sales::text AS sales, amount_atomic::text AS amount_atomic
    FROM seller_sales_days
    WHERE seller_id = ${agentId} AND day >= ${from}::date AND day <= ${sealedThrough(agentId)} AND sales > 0
    UNION ALL
    SELECT post_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*)::text, sum(amount_atomic)::text
    FROM purchases WHERE seller_id = ${agentId} AND created_at >= ${ledgerFrom(agentId, from)}
    GROUP BY 1, 2`.execute(db);
  return rows;
}

/**
 * The distinct buyers of the seller's sales since `from`, and how many of them are new: no purchase
 * from this seller before `from` (the rest bought from it before and came back). The sealed days'
 * buyers are counted from `seller_buyers`' index; the ledger is read for the days after them only.
 */
export async function sellerBuyers(
  db: Executor,
  agentId: string,
  from: string,
): Promise<{ total: number; new: number }> {
  const { rows } = await sql<{ total: number; new: number }>`
    WITH recent AS (
      SELECT DISTINCT buyer_address FROM purchases WHERE seller_id = ${agentId} AND created_at >= ${ledgerFrom(agentId, from)}),
    sealed AS (
      SELECT buyer_address, first_day < ${from}::date AS came_back FROM seller_buyers
      WHERE seller_id = ${agentId} AND last_day >= ${from}::date AND last_day <= ${sealedThrough(agentId)}),
    -- The recent buyers not among the window's sealed ones. One returns when it bought before the
    -- window: on a sealed day (its first day says so), or on a day before the window not sealed
    -- yet (read from the ledger, only while sealing has not reached the window).
    newcomers AS (
      SELECT r.buyer_address,
             CASE WHEN b.first_day < ${from}::date THEN true
                  WHEN ${sealedThrough(agentId)} + 1 >= ${from}::date THEN false
                  ELSE EXISTS (SELECT 1 FROM purchases e
                               WHERE e.buyer_address = r.buyer_address AND e.seller_id = ${agentId}
                                 AND e.created_at < (${from}::date::timestamp AT TIME ZONE 'UTC')) END AS came_back
      FROM recent r LEFT JOIN seller_buyers b ON b.seller_id = ${agentId} AND b.buyer_address = r.buyer_address
      WHERE NOT coalesce(b.last_day >= ${from}::date AND b.last_day <= ${sealedThrough(agentId)}, false))
    SELECT count(*)::int AS total, count(*) FILTER (WHERE NOT came_back)::int AS new
    FROM (SELECT * FROM sealed UNION ALL SELECT * FROM newcomers) w`.execute(db);
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
