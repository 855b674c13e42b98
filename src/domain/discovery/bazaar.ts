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
import { mcpListingOf, RESOURCE_TYPES, type ListedResource } from './bazaar-mcp.js';
import { search } from './search.js';
import { queryWords } from './search-words.js';

/** A DiscoveryResource of the x402 v2 Bazaar, as `/discovery/resources` and `/discovery/search` answer it. */
export type DiscoveryResource = ListedResource & { lastUpdated: string };

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
 * The resource types the filters keep: each skill is listed as its HTTP full view and as the
 * MCP tool that sells it (`buy_skill`); the registration is HTTP only.
 */
function typesOf(f: BazaarFilters): ReadonlyArray<ListedResource['type']> {
  return f.type === undefined ? RESOURCE_TYPES : RESOURCE_TYPES.filter((t) => t === f.type);
}

/**
 * Whether the Bazaar's own filters can match anything here: every resource is an `http` or
 * `mcp` resource paid with `exact` on this service's network and declares `bazaar`.
 */
function ours(site: SiteInfo, f: BazaarFilters): boolean {
  return (
    typesOf(f).length > 0 &&
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
  if (!state || !typesOf(f).includes('http')) return undefined;
  const reg = state.registration as unknown as ListedResource;
  const [accept] = reg.accepts;
  if (!accept) return undefined;
  if (f.category !== undefined || f.health !== undefined || (f.minBuyers ?? 0) > 0) return undefined;
  if (f.payTo !== undefined && f.payTo.toLowerCase() !== accept.payTo.toLowerCase()) return undefined;
  if (f.maxPrice !== undefined && BigInt(accept.amount) > BigInt(f.maxPrice)) return undefined;
  return withTime(reg, state.registration_at);
}

function withTime(item: ListedResource, lastUpdated: string): DiscoveryResource {
  const { resource, type, x402Version, accepts, ...rest } = item;
  return { resource, type, x402Version, accepts, lastUpdated, ...rest };
}

/** A skill's listings of the types kept, in RESOURCE_TYPES order: its HTTP full view, its MCP tool. */
function resourcesOf(
  site: SiteInfo,
  e: ListingEntry,
  types: ReadonlyArray<ListedResource['type']>,
): DiscoveryResource[] {
  const http = e.item as unknown as ListedResource;
  return types.flatMap((t) => {
    const item = t === 'http' ? http : mcpListingOf(site.baseUrl, http);
    return item ? [withTime(item, e.listed_at)] : [];
  });
}

/** The version of the listings: it moves whenever one of them does (a page cache key). */
export async function bazaarVersion(db: Db): Promise<string> {
  return (await readBazaarState(db))?.version ?? '0';
}

/**
 * `GET /discovery/resources`: the registration first, then the published paid skills, most
 * recently changed first, each as its 402 states it (its HTTP full view, then its MCP tool,
 * unless `type` keeps one); `total` counts what the filters keep. Read from the listings the
 * indexer keeps (bazaar-index.ts): two indexed statements, no join.
 */
export async function listResources(
  db: Db,
  site: SiteInfo,
  q: BazaarFilters & { limit: number; offset: number },
): Promise<ResourcesPage> {
  const pagination = { limit: q.limit, offset: q.offset };
  if (!ours(site, q)) return { x402Version: 2, items: [], pagination: { ...pagination, total: 0 } };
  const types = typesOf(q);
  const perSkill = types.length;
  const filter = listingFilter(q);
  const [state, skills] = await Promise.all([readBazaarState(db), countListings(db, filter)]);
  const registration = registrationIf(state, q);
  const first = registration ? 1 : 0;
  // Positions past the registration are the skills' listings, `perSkill` to a skill: read the
  // skills the page touches, expand them, and cut the page out.
  const from = Math.max(0, q.offset - first);
  const to = Math.max(0, q.offset + q.limit - first);
  const firstSkill = Math.floor(from / perSkill);
  const rows =
    to > from
      ? await readListingsPage(db, filter, { offset: firstSkill, limit: Math.ceil(to / perSkill) - firstSkill })
      : [];
  const expanded = rows.flatMap((e) => resourcesOf(site, e, types));
  const skip = from - firstSkill * perSkill;
  const items = [
    ...(registration && q.offset === 0 ? [registration] : []),
    ...expanded.slice(skip, skip + q.limit - (registration && q.offset === 0 ? 1 : 0)),
  ];
  return { x402Version: 2, items, pagination: { ...pagination, total: skills * perSkill + first } };
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
  const types = typesOf(q);
  const all = [
    ...(registration ? [registration] : []),
    ...ranked.flatMap((id) => {
      const e = listed.get(id);
      return e ? resourcesOf(site, e, types) : [];
    }),
  ];
  const next = offset + q.limit;
  return {
    x402Version: 2,
    resources: all.slice(offset, next),
    ...(answer.results.length >= SEARCH_WINDOW ? { partialResults: true } : {}),
    pagination: { limit: q.limit, cursor: next < all.length ? encodeCursor(next) : null },
  };
}
