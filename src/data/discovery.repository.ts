import { sql } from 'kysely';
import type { Db, Executor } from './db.js';
import { skillSales } from './own-purchases.js';
import { currentAudit, currentRating, type PostWithAuthor } from './posts.repository.js';

/** A skill as its listing is rendered from: the post, its author, its seller's health and its buyers. */
export type ListingSource = PostWithAuthor & { seller_health: string; seller_key: string; buyers: number };

/** A listing as stored: its filter columns and its DiscoveryResource (without lastUpdated). */
export interface ListingRow {
  postId: string;
  sellerId: string;
  /** What the listing shows of its seller (handle, avatar, health), as `SELLER_KEY` digests it. */
  sellerKey: string;
  payTo: string;
  amountAtomic: string;
  categories: string[];
  sellerHealth: string;
  buyers: number;
  item: Record<string, unknown>;
}

/** Where the listings stand: what they were rendered for, and a rebuild under way. */
export interface BazaarRenderState {
  /** What every listing was rendered for (base URL, chain, asset, ...); '' before the first pass. */
  renderedFor: string;
  /** A rebuild under way: what it renders for, and the last skill it rendered. */
  rebuild: { for: string; after: string } | undefined;
}

export async function readBazaarRenderState(trx: Executor): Promise<BazaarRenderState> {
  const row = await trx
    .selectFrom('bazaar_index_state')
    .select(['rendered_for', 'rebuilding_for', 'rebuild_after'])
    .executeTakeFirst();
  return {
    renderedFor: row?.rendered_for ?? '',
    rebuild:
      row?.rebuilding_for != null && row.rebuild_after != null
        ? { for: row.rebuilding_for, after: row.rebuild_after }
        : undefined,
  };
}

/** What a listing shows of its seller, digested: a listing is rendered again when it differs. */
const SELLER_KEY = sql<string>`md5(concat_ws('|', a.handle, a.avatar_url, coalesce(m.health_status, 'dormant')))`;

/** Every column of a `ListingSource`. */
const SOURCE_COLUMNS = sql`
  p.id, p.author_id, p.status, p.title, p.preview, p.price_atomic::text AS price_atomic, p.tags, p.oasf_skills, p.oasf_domains,
  p.current_version, p.skill_name, p.first_published_at, p.published_at, p.created_at, p.updated_at,
  a.handle AS author_handle, a.wallet_address AS author_wallet, a.avatar_url AS author_avatar_url,
  coalesce(m.health_status, 'dormant') AS seller_health, ${SELLER_KEY} AS seller_key,
  CASE WHEN p.status = 'published' AND p.price_atomic > 0
       THEN ${skillSales(sql.ref('p.id')).buyers} ELSE 0 END AS buyers,
  ${currentAudit(sql.ref('p.id'), sql.ref('p.current_version'))} AS current_audit,
  ${currentRating(sql.ref('p.id'))} AS current_rating`;

// Raw SQL below: the sources join posts, agents and metrics with a correlated count, and the
// seller key is an expression over the three, which reads plainer as SQL.

/**
 * The skills with these ids as their listings are rendered from, of any status, so the caller
 * drops the listings of those no longer listed.
 */
export async function readListingSources(trx: Executor, postIds: readonly string[]): Promise<ListingSource[]> {
  if (!postIds.length) return [];
  const { rows } = await sql<ListingSource>`
    SELECT ${SOURCE_COLUMNS}
    FROM posts p JOIN agents a ON a.id = p.author_id LEFT JOIN agent_metrics m ON m.agent_id = a.id
    WHERE p.id = ANY(${postIds}::uuid[])`.execute(trx);
  return rows;
}

/** The next `limit` published paid skills after `afterId`, in id order: one page of a rebuild. */
export async function readListedSourcesPage(trx: Executor, afterId: string, limit: number): Promise<ListingSource[]> {
  const { rows } = await sql<ListingSource>`
    SELECT ${SOURCE_COLUMNS}
    FROM posts p JOIN agents a ON a.id = p.author_id LEFT JOIN agent_metrics m ON m.agent_id = a.id
    WHERE p.status = 'published' AND p.price_atomic > 0 AND p.id > ${afterId}::uuid
    ORDER BY p.id LIMIT ${limit}`.execute(trx);
  return rows;
}

/**
 * The listed skills of these sellers whose listing shows something of its seller (handle, avatar,
 * health) that changed since it was rendered, at most `limit`.
 */
export async function readListingsOfChangedSellers(
  trx: Executor,
  sellerIds: readonly string[],
  limit: number,
): Promise<string[]> {
  if (!sellerIds.length) return [];
  const { rows } = await sql<{ post_id: string }>`
    SELECT l.post_id
    FROM agents a LEFT JOIN agent_metrics m ON m.agent_id = a.id JOIN bazaar_listings l ON l.seller_id = a.id
    WHERE a.id = ANY(${sellerIds}::uuid[]) AND l.seller_key <> ${SELLER_KEY}
    LIMIT ${limit}`.execute(trx);
  return rows.map((r) => r.post_id);
}

/** Drops the listings of skills no longer published with a price (the end of a rebuild). */
export async function dropUnlistedListings(trx: Executor): Promise<number> {
  const res = await trx
    .deleteFrom('bazaar_listings as l')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('posts as p')
            .select('p.id')
            .whereRef('p.id', '=', 'l.post_id')
            .where('p.status', '=', sql.lit('published'))
            .where('p.price_atomic', '>', sql.lit('0')),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * Writes listings and drops those of skills no longer listed. A listing whose item differs from
 * the stored one is listed again now (its lastUpdated); one whose filter columns alone changed
 * keeps its time. Returns how many rows changed.
 */
export async function writeListings(trx: Executor, rows: ListingRow[], dropped: string[]): Promise<number> {
  let changed = 0;
  if (dropped.length) {
    const res = await trx
      .deleteFrom('bazaar_listings')
      .where('post_id', '=', sql<string>`ANY(${dropped}::uuid[])`)
      .executeTakeFirst();
    changed += Number(res.numDeletedRows);
  }
  for (let i = 0; i < rows.length; i += 500) {
    const page = rows.slice(i, i + 500).map((r) => ({
      post_id: r.postId,
      seller_id: r.sellerId,
      seller_key: r.sellerKey,
      pay_to: r.payTo,
      amount_atomic: r.amountAtomic,
      categories: r.categories,
      seller_health: r.sellerHealth,
      buyers: r.buyers,
      item: r.item,
    }));
    // Raw SQL: rows from jsonb_to_recordset, and an upsert that keeps listed_at unless the item changed.
    const res = await sql`
      INSERT INTO bazaar_listings AS l (post_id, seller_id, seller_key, pay_to, amount_atomic, categories, seller_health, buyers, listed_at, item)
      SELECT x.post_id, x.seller_id, x.seller_key, x.pay_to, x.amount_atomic, x.categories, x.seller_health, x.buyers, clock_timestamp(), x.item
      FROM jsonb_to_recordset(${JSON.stringify(page)}::jsonb) AS x(
        post_id uuid, seller_id uuid, seller_key text, pay_to text, amount_atomic numeric, categories text[], seller_health text, buyers int, item jsonb)
      ON CONFLICT (post_id) DO UPDATE SET
        seller_id = excluded.seller_id, seller_key = excluded.seller_key, pay_to = excluded.pay_to, amount_atomic = excluded.amount_atomic,
        categories = excluded.categories, seller_health = excluded.seller_health, buyers = excluded.buyers,
        listed_at = CASE WHEN l.item IS DISTINCT FROM excluded.item THEN excluded.listed_at ELSE l.listed_at END,
        item = excluded.item
      WHERE (l.seller_id, l.seller_key, l.pay_to, l.amount_atomic, l.categories, l.seller_health, l.buyers, l.item)
        IS DISTINCT FROM (excluded.seller_id, excluded.seller_key, excluded.pay_to, excluded.amount_atomic, excluded.categories, excluded.seller_health, excluded.buyers, excluded.item)`.execute(
      trx,
    );
    changed += Number(res.numAffectedRows ?? 0);
  }
  return changed;
}

/**
 * Records what the listings were rendered for and a rebuild under way; the registration's listing
 * is written with it, timed anew when it differs. The version moves when anything did.
 */
export async function saveBazaarIndexState(
  trx: Executor,
  s: {
    renderedFor: string;
    rebuild: { for: string; after: string } | undefined;
    registration: Record<string, unknown>;
    changed: boolean;
  },
): Promise<void> {
  // Raw SQL: an upsert that times the registration anew only when it changed.
  await sql`
    INSERT INTO bazaar_index_state AS s (id, rendered_for, rebuilding_for, rebuild_after, registration, registration_at, version)
    VALUES (true, ${s.renderedFor}, ${s.rebuild?.for ?? null}, ${s.rebuild?.after ?? null}::uuid,
            ${JSON.stringify(s.registration)}::jsonb, clock_timestamp(), 1)
    ON CONFLICT (id) DO UPDATE SET
      rendered_for = excluded.rendered_for,
      rebuilding_for = excluded.rebuilding_for,
      rebuild_after = excluded.rebuild_after,
      registration_at = CASE WHEN s.registration IS DISTINCT FROM excluded.registration THEN excluded.registration_at ELSE s.registration_at END,
      registration = excluded.registration,
      version = s.version + CASE WHEN ${s.changed} OR s.registration IS DISTINCT FROM excluded.registration THEN 1 ELSE 0 END`.execute(
    trx,
  );
}

/** The filters a listing is chosen by; every one given must hold. */
export interface ListingFilter {
  /** Lower-case payee. */
  payTo?: string;
  /** An OASF skill or domain path: skills filed under it or under one of its descendants. */
  category?: string;
  /** The seller's health is one of these. */
  health?: string[];
  /** At least this many distinct buyer wallets. */
  minBuyers?: number;
  /** At most this price, in atomic units. */
  maxPrice?: string;
}

/** A stored listing: its DiscoveryResource (without lastUpdated) and when it last changed. */
export interface ListingEntry {
  post_id: string;
  item: Record<string, unknown>;
  /** ISO 8601, UTC, milliseconds. */
  listed_at: string;
}

/** The state of the listings: the registration's listing and the version that moves with any listing. */
export interface BazaarState {
  registration: Record<string, unknown>;
  registration_at: string;
  version: string;
}

/** When a listing last changed, as ISO text with milliseconds (to_char has no Kysely form). */
const LISTED_AT = sql<string>`to_char(l.listed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The listings the filter keeps. */
function listings(db: Executor, f: ListingFilter) {
  let q = db.selectFrom('bazaar_listings as l');
  if (f.payTo !== undefined) q = q.where('l.pay_to', '=', f.payTo);
  if (f.category !== undefined) q = q.where('l.categories', '@>', sql<string[]>`ARRAY[${f.category}]::text[]`);
  if (f.health !== undefined) q = q.where('l.seller_health', '=', sql<string>`ANY(${f.health}::text[])`);
  if (f.minBuyers !== undefined) q = q.where('l.buyers', '>=', f.minBuyers);
  if (f.maxPrice !== undefined) q = q.where('l.amount_atomic', '<=', sql<string>`${f.maxPrice}::numeric`);
  return q;
}

/** The state row; undefined until the indexer's first pass. */
export async function readBazaarState(db: Executor): Promise<BazaarState | undefined> {
  return db
    .selectFrom('bazaar_index_state')
    .select((eb) => [
      'registration',
      sql<string>`to_char(registration_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`.as('registration_at'),
      eb.cast<string>('version', 'text').as('version'),
    ])
    .executeTakeFirst();
}

/**
 * How many listings the filter keeps. Without a filter, the count kept with the listings
 * (`bazaar_listing_count`, migration 0044) rather than a count of every row.
 */
export async function countListings(db: Executor, f: ListingFilter): Promise<number> {
  if (Object.values(f).every((v) => v === undefined)) {
    const kept = await db.selectFrom('bazaar_listing_count').select('listings').executeTakeFirst();
    return Number(kept?.listings ?? 0);
  }
  const row = await listings(db, f)
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
    .executeTakeFirst();
  return row?.n ?? 0;
}

/** A page of the listings the filter keeps, most recently changed first. */
export async function readListingsPage(
  db: Executor,
  f: ListingFilter,
  page: { offset: number; limit: number },
): Promise<ListingEntry[]> {
  if (page.limit <= 0) return [];
  return listings(db, f)
    .select(['l.post_id', 'l.item', LISTED_AT.as('listed_at')])
    .orderBy('l.listed_at', 'desc')
    .orderBy('l.post_id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

/** The listings among these skills that the filter keeps, in no particular order. */
export async function readListingsOf(db: Executor, postIds: string[], f: ListingFilter): Promise<ListingEntry[]> {
  if (!postIds.length) return [];
  return listings(db, f)
    .select(['l.post_id', 'l.item', LISTED_AT.as('listed_at')])
    .where('l.post_id', '=', sql<string>`ANY(${postIds}::uuid[])`)
    .execute();
}

/** Records (or replaces) a seller's ownership proof of `origin`. */
export async function saveOwnershipProof(
  db: Executor,
  proof: { agentId: string; origin: string; signature: string; at: Date },
): Promise<void> {
  await db
    .insertInto('seller_ownership_proofs')
    .values({ agent_id: proof.agentId, origin: proof.origin, signature: proof.signature, proved_at: proof.at })
    .onConflict((oc) =>
      oc.columns(['agent_id', 'origin']).doUpdateSet((eb) => ({
        signature: eb.ref('excluded.signature'),
        proved_at: eb.ref('excluded.proved_at'),
      })),
    )
    .execute();
}

/** A paid published skill and, when its seller proved ownership of `origin`, that proof. */
export interface PaidListing {
  post_id: string;
  proof: string | null;
}

/**
 * The `limit` most bought listed skills (published, with a price: their Bazaar listings, most
 * distinct buyers first, then the most recently listed), each with its seller's proof of `origin`
 * if any.
 */
export async function findPaidListings(db: Executor, origin: string, limit: number): Promise<PaidListing[]> {
  return db
    .selectFrom('bazaar_listings as l')
    .leftJoin('seller_ownership_proofs as s', (join) =>
      join.onRef('s.agent_id', '=', 'l.seller_id').on('s.origin', '=', origin),
    )
    .select(['l.post_id', 's.signature as proof'])
    .orderBy('l.buyers', 'desc')
    .orderBy('l.listed_at', 'desc')
    .orderBy('l.post_id')
    .limit(limit)
    .execute();
}

/** The distinct proofs of `origin` by sellers that have a listed skill, the first `limit` proved. */
export async function findSellerProofs(db: Executor, origin: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('seller_ownership_proofs as s')
    .select('s.signature')
    .where('s.origin', '=', origin)
    .where((eb) =>
      eb.exists(
        eb.selectFrom('bazaar_listings as l').select(eb.lit(1).as('one')).whereRef('l.seller_id', '=', 's.agent_id'),
      ),
    )
    .orderBy('s.proved_at')
    .orderBy('s.agent_id')
    .limit(limit)
    .execute();
  return [...new Set(rows.map((r) => r.signature))];
}

/**
 * Runs `fn` on one connection that holds the lock of one document of the discovery index (the
 * index itself, or a shard), which every process takes to publish it: the publish that takes it
 * later reads later, so the document put last is the newest render. A session lock, not a
 * transaction: `fn` puts the document in the bucket meanwhile, and no transaction stays open
 * across that. `fn` works through the connection it is given (embedded PGlite has one); a
 * connection that is lost releases the lock with it.
 */
export function withSkillsIndexLock<T>(db: Db, part: string, fn: (conn: Db) => Promise<T>): Promise<T> {
  const lock = sql`hashtextextended(${`skills_index:${part}`}, 8004)`;
  return db.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(${lock})`.execute(conn);
    try {
      return await fn(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(${lock})`.execute(conn);
    }
  });
}
