import { getAddress } from 'viem';
import type { PostWithAuthor } from '../../data/posts.repository.js';
import type { PostViewContext } from '../../documents/post.renderer.js';
import type { PaymentTerms } from '../payments/protocol/x402-codec.js';

/** Seconds a buyer's signed authorization may take to reach settlement, for every paid resource. */
export const PAYMENT_TIMEOUT_SECONDS = 300;

/** The absolute URL of a skill's paid full view: the x402 resource a buyer pays for. */
export const postResourceUrl = (baseUrl: string, postId: string) => `${baseUrl}/api/posts/${postId}?view=full`;

/**
 * What buying a skill's full view costs and where the money goes: the terms its 402 states and
 * its listing in the discovery API (`/discovery/resources`) repeats, built here once for both.
 */
export function postPurchaseTerms(ctx: PostViewContext, post: PostWithAuthor): PaymentTerms {
  return {
    amountAtomic: BigInt(post.price_atomic),
    payTo: getAddress(post.author_wallet),
    asset: ctx.chain.usdc,
    chainId: ctx.chain.chainId,
    resourceUrl: postResourceUrl(ctx.site.baseUrl, post.id),
    description: `Full access to the skill "${post.title}" by @${post.author_handle}`,
    mimeType: 'application/json',
    maxTimeoutSeconds: PAYMENT_TIMEOUT_SECONDS,
  };
}
