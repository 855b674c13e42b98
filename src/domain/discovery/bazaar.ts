import type { Db } from '../../data/db.js';
import {
  countListings,
  readBazaarState,
  readListingsOf,
  readListingsPage,
  type BazaarState,
  type ListingEntry,
  type ListingFilter,
} from '../../data/discovery.repository.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { encodeCursor, SEARCH_WINDOW, type BazaarFilters } from './bazaar-params.js';
import type { StoredResource } from '../projections/bazaar-listings.js';
import { search } from './search.js';
import { queryWords } from './search-words.js';

/** A DiscoveryResource of the x402 v2 Bazaar, as `/discovery/resources` and `/discovery/search` answer it. */
export type DiscoveryResource = StoredResource & { lastUpdated: string };

export interface ResourcesPage {
  x402Version: 2;
  items: DiscoveryResource[];
  pagination: { limit: number; offset: number; total: number };
}

export interface SearchPage {
  x402Version: 2;
  resources: DiscoveryResource[];
  partialResults?: boolean;
  pagination: { limit: number; cursor: string | null };
}

/** The extension keys every listed resource carries. */
const LISTED_EXTENSIONS = new Set(['bazaar']);

/**
 * Whether the Bazaar's own filters can match anything here: every resource is an `http`
 * resource paid with `exact` on this service's network and declares `bazaar`.
 */
function ours(site: SiteInfo, f: BazaarFilters): boolean {
  return (
    (f.type === undefined || f.type === 'http') &&
    (f.scheme === undefined || f.scheme === 'exact') &&
    (f.network === undefined || f.network === site.network) &&
    (f.extensions === undefined || f.extensions.every((k) => LISTED_EXTENSIONS.has(k)))
  );
}

const listingFilter = (f: BazaarFilters): ListingFilter => ({
  ...(f.payTo !== undefined ? { payTo: f.payTo.toLowerCase() } : {}),
  ...(f.category !== undefined ? { category: f.category } : {}),
  ...(f.health !== undefined ? { health: f.health } : {}),
  ...(f.minBuyers !== undefined ? { minBuyers: f.minBuyers } : {}),
  ...(f.maxPrice !== undefined ? { maxPrice: f.maxPrice } : {}),
});

/**
 * The registration, when the filters keep it: it has no OASF category, seller health or buyers,
 * so a filter on any of those leaves it out (`minBuyers=0` keeps it, as it keeps every skill).
 */
function registrationIf(state: BazaarState | undefined, f: BazaarFilters): DiscoveryResource | undefined {
  if (!state) return undefined;
  const reg = state.registration as unknown as StoredResource;
  const [accept] = reg.accepts;
  if (!accept) return undefined;
  if (f.category !== undefined || f.health !== undefined || (f.minBuyers ?? 0) > 0) return undefined;
  if (f.payTo !== undefined && f.payTo.toLowerCase() !== accept.payTo.toLowerCase()) return undefined;
  if (f.maxPrice !== undefined && BigInt(accept.amount) > BigInt(f.maxPrice)) return undefined;
  return withTime(reg, state.registration_at);
}

function withTime(item: StoredResource, lastUpdated: string): DiscoveryResource {
  const { resource, type, x402Version, accepts, ...rest } = item;
  return { resource, type, x402Version, accepts, lastUpdated, ...rest };
}

const resourceOf = (e: ListingEntry) => withTime(e.item as unknown as StoredResource, e.listed_at);

/** The version of the listings: it moves whenever one of them does (a page cache key). */
export async function bazaarVersion(db: Db): Promise<string> {
  return (await readBazaarState(db))?.version ?? '0';
}

/**
 * `GET /discovery/resources`: the registration first, then the published paid skills, most
 * recently changed first, each as its 402 states it; `total` counts what the filters keep. Read
 * from the listings the indexer keeps (bazaar-index.ts): two indexed statements, no join.
 */
export async function listResources(
  db: Db,
  site: SiteInfo,
  q: BazaarFilters & { limit: number; offset: number },
): Promise<ResourcesPage> {
  const pagination = { limit: q.limit, offset: q.offset };
  if (!ours(site, q)) return { x402Version: 2, items: [], pagination: { ...pagination, total: 0 } };
  const filter = listingFilter(q);
  const [state, skills] = await Promise.all([readBazaarState(db), countListings(db, filter)]);
  const registration = registrationIf(state, q);
  const first = registration ? 1 : 0;
  const rows = await readListingsPage(db, filter, {
    offset: Math.max(0, q.offset - first),
    limit: q.offset < first ? q.limit - first : q.limit,
  });
  const items = [...(registration && q.offset === 0 ? [registration] : []), ...rows.map(resourceOf)];
  return { x402Version: 2, items, pagination: { ...pagination, total: skills + first } };
}

/** Words of a query that find the registration: what it is for. */
const REGISTRATION_STEMS = ['regist', 'signup', 'onboard', 'identit', 'account'];

/**
 * `GET /discovery/search`: skills matched by the marketplace's full-text search (title, tags and
 * preview, typos corrected; search.ts), best first, among those the filters keep, and the
 * registration when the query asks for it. The search ranks up to SEARCH_WINDOW skills;
 * `partialResults` says when more matched. The cursor is the position of the next result.
 */
export async function searchResources(
  db: Db,
  site: SiteInfo,
  q: BazaarFilters & { query: string; limit: number; cursor?: number },
): Promise<SearchPage> {
  const offset = q.cursor ?? 0;
  const empty: SearchPage = { x402Version: 2, resources: [], pagination: { limit: q.limit, cursor: null } };
  if (!ours(site, q)) return empty;
  const [answer, state] = await Promise.all([search(db, site, q.query, 'posts', SEARCH_WINDOW), readBazaarState(db)]);
  const ranked = answer.results.filter((r) => r.type === 'post').map((r) => r.id);
  const listed = new Map((await readListingsOf(db, ranked, listingFilter(q))).map((e) => [e.post_id, e]));
  const words = queryWords(q.query);
  const wantsRegistration = words.some((w) =>
    REGISTRATION_STEMS.some((s) => w.startsWith(s) || (w.length >= 4 && s.startsWith(w))),
  );
  const registration = wantsRegistration ? registrationIf(state, q) : undefined;
  const all = [
    ...(registration ? [registration] : []),
    ...ranked.flatMap((id) => {
      const e = listed.get(id);
      return e ? [resourceOf(e)] : [];
    }),
  ];
  const next = offset + q.limit;
  return {
    x402Version: 2,
    resources: all.slice(offset, next),
    ...(answer.results.length >= SEARCH_WINDOW ? { partialResults: true } : {}),
    pagination: { limit: q.limit, cursor: next < all.length && next < SEARCH_WINDOW ? encodeCursor(next) : null },
  };
}
