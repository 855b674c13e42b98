import { getAddress } from 'viem';
import type { Db } from '../../data/db.js';
import type { Payment } from '../../data/schema.js';
import {
  findPostWithAuthor,
  findVersion,
  hasEntitlement,
  type PostVersion,
  type PostWithAuthor,
} from '../../data/posts.repository.js';
import { fullView, previewView, type PostViewContext } from '../../documents/post.renderer.js';
import { NotFoundError } from '../../platform/errors.js';
import type { AgentClaims } from '../identity/jwt.js';
import { postListing } from '../payments/listing.js';
import type { PaidResource } from '../payments/paywall.js';

export interface PostsDeps extends PostViewContext {
  db: Db;
}

/** What a buyer of a post is served once the payment settles: the post and its current version. */
type Purchased = { post: PostWithAuthor; version: PostVersion };

export type PostRead =
  | { kind: 'document'; body: ReturnType<typeof previewView> | ReturnType<typeof fullView>; cacheable: boolean }
  | { kind: 'purchase'; resource: PaidResource<Purchased> };

/**
 * Who sees what: a published post's preview is public; drafts and unpublished posts exist only
 * for their author (and, for the full view, for buyers who keep their access). The full view is
 * free for free posts, for the author and for buyers; everyone else must buy it.
 */
export async function readPost(
  deps: PostsDeps,
  postId: string,
  view: 'preview' | 'full',
  viewer: AgentClaims | undefined,
): Promise<PostRead> {
  const post = await findPostWithAuthor(deps.db, postId);
  const notFound = () => new NotFoundError(`Post ${postId}`, 'post_not_found');
  if (!post) throw notFound();
  const isAuthor = viewer?.sub === post.author_id;
  const isBuyer = viewer && !isAuthor ? await hasEntitlement(deps.db, post.id, viewer.wallet) : false;
  if (post.status !== 'published' && !isAuthor && !(view === 'full' && isBuyer)) throw notFound();

  if (view === 'preview')
    return { kind: 'document', body: previewView(post, deps), cacheable: post.status === 'published' && !viewer };
  if (isAuthor || isBuyer || BigInt(post.price_atomic) === 0n) {
    const version = await findVersion(deps.db, post.id, post.current_version);
    return {
      kind: 'document',
      body: fullView(post, version, deps),
      cacheable: BigInt(post.price_atomic) === 0n && post.status === 'published' && !viewer,
    };
  }
  return { kind: 'purchase', resource: purchaseResource(deps, post) };
}

/** A published post and its current version (what its manifest states); 404 for any other post. */
export async function readPublishedPost(db: Db, postId: string): Promise<Purchased> {
  const post = await findPostWithAuthor(db, postId);
  if (post?.status !== 'published') throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  return { post, version: await findVersion(db, post.id, post.current_version) };
}

function purchaseResource(deps: PostsDeps, post: PostWithAuthor): PaidResource<Purchased> {
  return {
    purpose: 'purchase',
    postId: post.id,
    terms: {
      amountAtomic: BigInt(post.price_atomic),
      payTo: getAddress(post.author_wallet),
      asset: deps.chain.usdc,
      chainId: deps.chain.chainId,
      resourceUrl: `${deps.site.baseUrl}/api/posts/${post.id}?view=full`,
      description: `Full access to the skill "${post.title}" by @${post.author_handle}`,
      mimeType: 'application/json',
      maxTimeoutSeconds: 300,
    },
    listing: () => postListing(post, deps),
    // Re-read: the post may have been unpublished or repriced since the 402 was issued.
    prepare: () => readPublishedPost(deps.db, post.id),
    render: async (_payment: Payment, prepared) => fullView(prepared.post, prepared.version, deps),
  };
}
