import { createHash } from 'node:crypto';
import type { Db } from '../../data/db.js';
import {
  readBazaarRenderKey,
  readListingSources,
  saveBazaarIndexState,
  writeListings,
  type ListingRow,
  type ListingSource,
} from '../../data/discovery.repository.js';
import { beginProjectionPass, endProjectionPass } from '../../data/projections.repository.js';
import type { PostWithAuthor } from '../../data/posts.repository.js';
import { postListing, registrationListing, type ResourceListing } from '../payments/protocol/extensions/bazaar.js';
import { requirementsV2, type PaymentTerms } from '../payments/protocol/x402-codec.js';
import { postPurchaseTerms } from '../posts/post-terms.js';
import { registrationTerms, type RegistrationTermsContext } from '../identity/registration-terms.js';

/**
 * The shape of a stored listing. Raise it when what an item holds changes: every listing is
 * then rendered again by the next indexer pass.
 */
const LISTING_SHAPE = 1;

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
const isListed = (s: ListingSource) => s.status === 'published' && BigInt(s.price_atomic) > 0n;

function rowOf(ctx: BazaarContext, s: ListingSource): ListingRow {
  const item = postResource(ctx, s);
  return {
    postId: s.id,
    sellerId: s.author_id,
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

/**
 * One pass of the Bazaar listings projection: the listings of the skills changed since its
 * watermark, by themselves or through their seller (handle, avatar, health, a sale), are rendered
 * and written; skills unpublished or made free lose theirs. A change of the base URL, chain,
 * asset, treasury or listing shape renders every listing again. At most one pass runs at a time.
 * Returns how many listings changed, or null when another pass holds the lock.
 */
export async function indexBazaarListings(db: Db, ctx: BazaarContext): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
    const range = await beginProjectionPass(trx, 'bazaar');
    if (!range) return null;
    const key = renderKey(ctx);
    const rebuild = (await readBazaarRenderKey(trx)) !== key;
    const sources = await readListingSources(trx, rebuild ? 'all' : range);
    const rows = sources.filter(isListed).map((s) => rowOf(ctx, s));
    const dropped = sources.filter((s) => !isListed(s)).map((s) => s.id);
    const changed = await writeListings(trx, rows, dropped, rebuild);
    await saveBazaarIndexState(trx, {
      renderedFor: key,
      registration: registrationResource(ctx) as unknown as Record<string, unknown>,
      changed: changed > 0,
    });
    await endProjectionPass(trx, 'bazaar', range);
    return changed;
  });
}
