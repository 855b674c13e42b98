import { sortedByKey } from '../platform/text.js';
import { sql } from 'kysely';
import type { Executor } from './db.js';
import type { PostAggregates, SalesAggregates } from './scoring.repository.js';

/**
 * What an agent's activity aggregates and published skills' digest are read from, as the indexes
 * alone give it: its posts (count, and an order-free digest of each post's id and change mark,
 * which every write to a post or to one of its versions moves, whatever order transactions commit
 * in) and its purchases (count, and an order-free digest of their change marks, which every write
 * to a purchase moves). With the oldest post and purchase still inside the windows: when the first
 * of them leaves its window, the aggregates change though nothing was written.
 */
export interface ActivitySources {
  /** The posts' side: their count and digest. */
  posts: string;
  /** The purchases' side: their count and digest. */
  sales: string;
  /** Publication of the oldest post published after `short`; null when there is none. */
  oldestRecentPost: Date | null;
  /** Time of the oldest purchase after `long`; null when there is none. */
  oldestRecentSale: Date | null;
}

/**
 * An agent's aggregates as recorded (`agent_activity_records`), without the agent's id, in two
 * parts: what its posts add up to (with its published skills' digest) and what its sales add up
 * to, each with what it was read from and the instant it stops holding, so a sale leaves the posts'
 * part usable and a publication the sales' part.
 */
export interface ActivityRecord {
  /** What read the record: the code, and each part's sources (`code:posts:sales`). */
  sources: string;
  asOf: Date;
  posts: Omit<PostAggregates, 'agent_id'> | null;
  categories: number | null;
  /** `readPublishedSkillsDigests`'s digest; null without a published skill. */
  skillsDigest: string | null;
  /** The earliest instant one of the agent's posts leaves the 30-day window; null when none is in it. */
  postsValidUntil: Date | null;
  sales: Omit<SalesAggregates, 'agent_id'> | null;
  /** The earliest instant one of the agent's sales leaves the 90-day window; null when none is in it. */
  salesValidUntil: Date | null;
}

/** What a record's aggregates column holds. */
interface RecordedAggregates {
  posts: ActivityRecord['posts'];
  categories: number | null;
  postsValidUntil?: string | null;
  sales: ActivityRecord['sales'];
  salesValidUntil?: string | null;
}

type Since = { short: Date; long: Date };

/** One agent's posts: their count and digest, and the oldest published after `since.short`. */
const postsSide = (since: Since) => sql`
  SELECT count(*) AS n, coalesce(sum(hashtextextended(id::text || ':' || change_txid::text, 0)), 0) AS digest,
    min(published_at) FILTER (WHERE published_at > ${since.short}) AS oldest_recent
  FROM posts WHERE author_id = a.id`;

/** One agent's purchases: their count and digest, and the oldest made after `since.long`. */
const salesSide = (since: Since) => sql`
  SELECT count(*) AS n, coalesce(sum(hashtextextended(change_txid::text, 0)), 0) AS digest,
    min(created_at) FILTER (WHERE created_at > ${since.long}) AS oldest_recent
  FROM purchases WHERE seller_id = a.id`;

/** The sources of each of `ids` (every agent asked for has an entry), from two index-only reads an agent. */
export async function readActivitySources(
  db: Executor,
  ids: string[],
  since: Since,
): Promise<Map<string, ActivitySources>> {
  if (!ids.length) return new Map();
  const { rows } = await sql<{
    agent_id: string;
    posts: string;
    sales: string;
    oldest_recent_post: Date | null;
    oldest_recent_sale: Date | null;
  }>`
    SELECT a.id AS agent_id, p.n || ':' || p.digest AS posts, s.n || ':' || s.digest AS sales,
      p.oldest_recent AS oldest_recent_post, s.oldest_recent AS oldest_recent_sale
    FROM unnest(${ids}::uuid[]) a(id)
    CROSS JOIN LATERAL (${postsSide(since)}) p
    CROSS JOIN LATERAL (${salesSide(since)}) s`.execute(db);
  return new Map(
    rows.map((r) => [
      r.agent_id,
      {
        posts: r.posts,
        sales: r.sales,
        oldestRecentPost: r.oldest_recent_post,
        oldestRecentSale: r.oldest_recent_sale,
      },
    ]),
  );
}

/**
 * One side of the sources of each of `ids`, from one index-only read an agent: for a part read
 * again alone (a sale's render reads its seller's purchases, not its skills).
 */
export async function readSideSources(
  db: Executor,
  side: 'posts' | 'sales',
  ids: string[],
  since: Since,
): Promise<Map<string, { sources: string; oldestRecent: Date | null }>> {
  if (!ids.length) return new Map();
  const { rows } = await sql<{ agent_id: string; sources: string; oldest_recent: Date | null }>`
    SELECT a.id AS agent_id, x.n || ':' || x.digest AS sources, x.oldest_recent
    FROM unnest(${ids}::uuid[]) a(id)
    CROSS JOIN LATERAL (${side === 'posts' ? postsSide(since) : salesSide(since)}) x`.execute(db);
  return new Map(rows.map((r) => [r.agent_id, { sources: r.sources, oldestRecent: r.oldest_recent }]));
}

/** The earlier of two instants, null standing for never. */
const earlier = (a: Date | null, b: Date | null): Date | null => (a && b ? (a < b ? a : b) : (a ?? b));

const revive = <T extends Record<string, unknown>>(row: T | null, key: keyof T): T | null =>
  row && row[key] !== null ? { ...row, [key]: new Date(row[key] as string) } : row;

/** A part's recorded instant; undefined when the record predates parts (it is then read afresh). */
const instant = (v: string | null | undefined): Date | null | undefined =>
  v === undefined ? undefined : v === null ? null : new Date(v);

/** The recorded aggregates of each of `ids` that has a record. */
export async function readActivityRecords(db: Executor, ids: string[]): Promise<Map<string, ActivityRecord>> {
  if (!ids.length) return new Map();
  const rows = await db
    .selectFrom('agent_activity_records')
    .selectAll()
    .where(sql<boolean>`agent_id = ANY(${ids}::uuid[])`)
    .execute();
  return new Map(
    rows.flatMap((r) => {
      const a = r.aggregates as unknown as RecordedAggregates;
      const postsValidUntil = instant(a.postsValidUntil);
      const salesValidUntil = instant(a.salesValidUntil);
      if (postsValidUntil === undefined || salesValidUntil === undefined) return [];
      return [
        [
          r.agent_id,
          {
            sources: r.sources,
            asOf: r.as_of,
            posts: revive(a.posts, 'last_publish'),
            categories: a.categories,
            skillsDigest: r.skills_digest,
            postsValidUntil,
            sales: revive(a.sales, 'last_settle'),
            salesValidUntil,
          },
        ] as const,
      ];
    }),
  );
}

/**
 * Records these agents' aggregates and skills' digests (one statement for all), replacing what was
 * recorded (`valid_until`: the earlier of the two parts' instants). In the agents' order, so two
 * writers of overlapping agents lock them in the same order.
 */
export async function saveActivityRecords(
  db: Executor,
  records: Array<ActivityRecord & { agentId: string }>,
): Promise<void> {
  if (!records.length) return;
  const inOrder = sortedByKey(records, (r) => r.agentId);
  await db
    .insertInto('agent_activity_records')
    .values(
      inOrder.map((r) => ({
        agent_id: r.agentId,
        sources: r.sources,
        valid_until: earlier(r.postsValidUntil, r.salesValidUntil),
        as_of: r.asOf,
        aggregates: JSON.stringify({
          posts: r.posts,
          categories: r.categories,
          postsValidUntil: r.postsValidUntil?.toISOString() ?? null,
          sales: r.sales,
          salesValidUntil: r.salesValidUntil?.toISOString() ?? null,
        } satisfies RecordedAggregates),
        skills_digest: r.skillsDigest,
      })),
    )
    .onConflict((oc) =>
      oc.column('agent_id').doUpdateSet((eb) => ({
        sources: eb.ref('excluded.sources'),
        valid_until: eb.ref('excluded.valid_until'),
        as_of: eb.ref('excluded.as_of'),
        aggregates: eb.ref('excluded.aggregates'),
        skills_digest: eb.ref('excluded.skills_digest'),
      })),
    )
    .execute();
}
