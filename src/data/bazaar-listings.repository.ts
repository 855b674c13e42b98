import { sql } from 'kysely';
import type { Executor } from './db.js';

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

const LISTED_AT = sql`to_char(l.listed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

function where(f: ListingFilter) {
  return sql.join(
    [
      sql`true`,
      ...(f.payTo !== undefined ? [sql`l.pay_to = ${f.payTo}`] : []),
      ...(f.category !== undefined ? [sql`l.categories @> ARRAY[${f.category}]::text[]`] : []),
      ...(f.health !== undefined ? [sql`l.seller_health = ANY(${f.health}::text[])`] : []),
      ...(f.minBuyers !== undefined ? [sql`l.buyers >= ${f.minBuyers}`] : []),
      ...(f.maxPrice !== undefined ? [sql`l.amount_atomic <= ${f.maxPrice}::numeric`] : []),
    ],
    sql` AND `,
  );
}

/** The state row; undefined until the indexer's first pass. */
export async function readBazaarState(db: Executor): Promise<BazaarState | undefined> {
  const { rows } = await sql<BazaarState>`
    SELECT registration, to_char(registration_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS registration_at,
           version::text AS version
    FROM bazaar_index_state`.execute(db);
  return rows[0];
}

/** How many listings the filter keeps. */
export async function countListings(db: Executor, f: ListingFilter): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM bazaar_listings l WHERE ${where(f)}`.execute(
    db,
  );
  return rows[0]?.n ?? 0;
}

/** A page of the listings the filter keeps, most recently changed first. */
export async function readListingsPage(
  db: Executor,
  f: ListingFilter,
  page: { offset: number; limit: number },
): Promise<ListingEntry[]> {
  if (page.limit <= 0) return [];
  const { rows } = await sql<ListingEntry>`
    SELECT l.post_id, l.item, ${LISTED_AT} AS listed_at FROM bazaar_listings l
    WHERE ${where(f)}
    ORDER BY l.listed_at DESC, l.post_id
    LIMIT ${page.limit} OFFSET ${page.offset}`.execute(db);
  return rows;
}

/** The listings among these skills that the filter keeps, in no particular order. */
export async function readListingsOf(db: Executor, postIds: string[], f: ListingFilter): Promise<ListingEntry[]> {
  if (!postIds.length) return [];
  const { rows } = await sql<ListingEntry>`
    SELECT l.post_id, l.item, ${LISTED_AT} AS listed_at FROM bazaar_listings l
    WHERE l.post_id = ANY(${postIds}::uuid[]) AND ${where(f)}`.execute(db);
  return rows;
}
