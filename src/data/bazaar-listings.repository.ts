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

/** How many listings the filter keeps. */
export async function countListings(db: Executor, f: ListingFilter): Promise<number> {
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
