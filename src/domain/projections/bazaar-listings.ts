import { createHash } from 'node:crypto';
import type { Db, Executor } from '../../data/db.js';
import {
  dropUnlistedListings,
  readBazaarRenderState,
  readListedSourcesPage,
  readListingSources,
  readListingsOfChangedSellers,
  saveBazaarIndexState,
  writeListings,
  type ListingRow,
  type ListingSource,
} from '../../data/discovery.repository.js';
import {
  beginProjectionPass,
  CHANGE_BATCH,
  NIL_ID,
  readChangeBatch,
  readCursor,
  saveCursor,
  type CursorName,
  type ChangeSource,
} from '../../data/projections.repository.js';
import type { PostWithAuthor } from '../../data/posts.repository.js';
import { postListing, registrationListing, type ResourceListing } from '../payments/protocol/extensions/bazaar.js';
import { requirementsV2, type PaymentTerms } from '../payments/protocol/x402-codec.js';
import { postPurchaseTerms } from '../posts/post-terms.js';
import { registrationTerms, type RegistrationTermsContext } from '../identity/registration-terms.js';

/**
 * The shape of a stored listing. Raise it when what a listing holds changes: every listing is
 * then rendered again, a page per pass. (2: listings keep their seller's key, `seller_key`; 3: the
 * output example states the audit verdict, and a skill whose audit failed is not listed; 4: the output
 * example states the rating by verified buyers.)
 */
const LISTING_SHAPE = 4;

/** What listings are rendered from beside the skills: the site, its chain, asset and treasury. */
export type BazaarContext = RegistrationTermsContext;

/** A DiscoveryResource (x402 v2 Bazaar) without its lastUpdated, which is the time it was stored. */
export interface StoredResource {
  resource: string;
  type: 'http';
  x402Version: 2;
  accepts: ReturnType<typeof requirementsV2>[];
  description: string;
  mimeType: string;
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
  extensions: { bazaar: Record<string, unknown> };
}

/** The resource as its 402 states it: the same terms, service metadata and `bazaar` declaration. */
function resourceOf(terms: PaymentTerms, listing: ResourceListing): StoredResource {
  return {
    resource: terms.resourceUrl,
    type: 'http',
    x402Version: 2,
    accepts: [requirementsV2(terms)],
    description: terms.description,
    mimeType: terms.mimeType,
    ...(listing.serviceName ? { serviceName: listing.serviceName } : {}),
    ...(listing.tags ? { tags: listing.tags } : {}),
    ...(listing.iconUrl ? { iconUrl: listing.iconUrl } : {}),
    extensions: { bazaar: listing.bazaar },
  };
}

/** A skill's listing: `GET /api/posts/{id}?view=full`, paid to its seller. */
export function postResource(ctx: BazaarContext, post: PostWithAuthor): StoredResource {
  return resourceOf(postPurchaseTerms(ctx, post), postListing(post, ctx));
}

/** The registration's listing: `POST /api/agents/verify`, paid to the treasury. */
export function registrationResource(ctx: BazaarContext): StoredResource {
  const terms = registrationTerms(
    ctx,
    'Register an agent on Skill Market: sign the challenge of POST /api/agents/challenge, then pay here',
  );
  return resourceOf(terms, registrationListing({ action: 'register', handle: 'your-handle' }));
}

/** Every OASF path of a skill with each of its ancestors: a category matches what is filed under it. */
export function categoriesOf(paths: readonly string[]): string[] {
  const all = new Set<string>();
  for (const path of paths) {
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i++) all.add(parts.slice(0, i).join('/'));
  }
  return [...all].sort();
}

/** Only published paid skills are x402 resources. */
/** Listed: published, paid, and for sale (a current version whose audit failed is not sold). */
const isListed = (s: ListingSource) =>
  s.status === 'published' && BigInt(s.price_atomic) > 0n && s.current_audit !== 'fail';

function rowOf(ctx: BazaarContext, s: ListingSource): ListingRow {
  const item = postResource(ctx, s);
  return {
    postId: s.id,
    sellerId: s.author_id,
    sellerKey: s.seller_key,
    payTo: s.author_wallet.toLowerCase(),
    amountAtomic: s.price_atomic.toString(),
    categories: categoriesOf([...s.oasf_skills, ...s.oasf_domains]),
    sellerHealth: s.seller_health,
    buyers: s.buyers,
    item: item as unknown as Record<string, unknown>,
  };
}

/** A digest of everything a listing is rendered from besides its skill. */
function renderKey(ctx: BazaarContext): string {
  const { site, chain } = ctx;
  return createHash('sha256')
    .update(
      JSON.stringify([
        LISTING_SHAPE,
        site.baseUrl,
        chain.chainId,
        chain.usdc.address,
        chain.usdc.name,
        chain.usdc.version,
        chain.usdc.decimals,
        chain.treasury,
        site.registrationPriceAtomic.toString(),
      ]),
    )
    .digest('base64url');
}

/** Renders and writes the listings of these sources; those no longer listed are dropped. */
async function project(trx: Executor, ctx: BazaarContext, sources: ListingSource[]): Promise<number> {
  const rows = sources.filter(isListed).map((s) => rowOf(ctx, s));
  const dropped = sources.filter((s) => !isListed(s)).map((s) => s.id);
  return writeListings(trx, rows, dropped);
}

/**
 * Where the listings' changes come from, each read from its own cursor in bounded batches: the
 * skills themselves; their sales (a listing shows its buyers); their sellers (a listing shows the
 * seller's handle, avatar and health: only listings rendered with other values than the seller's
 * now are rendered again, so a sale, which moves the seller's figures, leaves the rest alone).
 */
const SOURCES: { cursor: CursorName; table: ChangeSource }[] = [
  { cursor: 'bazaar', table: 'posts' },
  { cursor: 'bazaar:sales', table: 'purchases' },
  { cursor: 'bazaar:sellers', table: 'agents' },
];

/**
 * One pass of the Bazaar listings projection (docs/projections.md): at most one batch of each
 * source's changes, or, after a change of the base URL, chain, asset, treasury or listing shape,
 * one page of a rebuild of every listing (the sources wait for the rebuild, then take up the
 * changes made meanwhile). At most one pass runs at a time. Returns how many listings changed and
 * whether more work waits, or null when another pass holds the lock.
 */
export async function indexBazaarListings(
  db: Db,
  ctx: BazaarContext,
  limit = CHANGE_BATCH,
): Promise<{ changed: number; more: boolean } | null> {
  return db.transaction().execute(async (trx) => {
    const horizon = await beginProjectionPass(trx, 'bazaar');
    if (horizon === undefined) return null;
    const key = renderKey(ctx);
    const state = await readBazaarRenderState(trx);
    const registration = registrationResource(ctx) as unknown as Record<string, unknown>;
    if (state.renderedFor !== key) {
      const after = state.rebuild?.for === key ? state.rebuild.after : NIL_ID;
      // A rebuild renders every listing as it reads now, so every change below this horizon is in
      // it: the sources start from there once it is done.
      if (after === NIL_ID)
        for (const source of SOURCES) await saveCursor(trx, source.cursor, { txid: horizon, id: NIL_ID });
      const page = await readListedSourcesPage(trx, after, limit);
      let changed = await project(trx, ctx, page);
      const last = page[page.length - 1];
      const done = page.length < limit || !last;
      if (done) changed += await dropUnlistedListings(trx);
      await saveBazaarIndexState(trx, {
        renderedFor: done ? key : state.renderedFor,
        rebuild: done || !last ? undefined : { for: key, after: last.id },
        registration,
        changed: changed > 0,
      });
      return { changed, more: !done };
    }
    let changed = 0;
    let more = false;
    for (const source of SOURCES) {
      const from = await readCursor(trx, source.cursor);
      const batch = await readChangeBatch(trx, source.table, from, horizon, limit);
      const postIds =
        source.table === 'posts'
          ? batch.ids
          : source.table === 'purchases'
            ? batch.postIds
            : await readListingsOfChangedSellers(trx, batch.ids, limit);
      changed += await project(trx, ctx, await readListingSources(trx, postIds));
      // A seller whose listings are more than one batch keeps its place: the next pass takes the
      // rest (those rendered now no longer differ).
      if (source.table === 'agents' && postIds.length >= limit) more = true;
      else {
        await saveCursor(trx, source.cursor, batch.reached);
        more ||= batch.more;
      }
    }
    // The state moves only with the listings: its row is not rewritten five times a second for nothing.
    if (changed > 0)
      await saveBazaarIndexState(trx, { renderedFor: key, rebuild: undefined, registration, changed: true });
    return { changed, more };
  });
}
