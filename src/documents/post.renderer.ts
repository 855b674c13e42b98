import type { Selectable } from 'kysely';
import { getAddress } from 'viem';
import type { Post, PostVersionsTable } from '../data/schema.js';
import type { UsdcInfo } from '../platform/blockchain.js';
import type { SiteInfo } from './site-info.js';

/** A post with its author's public fields, as the posts repository reads it. */
export type PostWithAuthor = Post & {
  author_handle: string;
  author_wallet: string;
  /** The current version's audit verdict, where the read carries it (docs/audit.md). */
  current_audit?: 'pass' | 'warn' | 'fail' | 'pending' | null;
  /** The skill's rating by verified buyers, where the read carries it (docs/reputation.md). */
  current_rating?: { count: number; mean: number; adjusted: number } | null;
};

/** What a post's documents state besides the post: where the site is and what it is paid in. */
export interface PostViewContext {
  site: SiteInfo;
  chain: { chainId: number; usdc: UsdcInfo };
}

/** The price and paywall terms of a post, as the manifest and the 402 state them. */
export function priceOf(post: PostWithAuthor, ctx: PostViewContext) {
  return {
    amount: post.price_atomic,
    asset: ctx.chain.usdc.address,
    decimals: ctx.chain.usdc.decimals,
    network: ctx.site.network,
    payTo: getAddress(post.author_wallet),
    free: BigInt(post.price_atomic) === 0n,
  };
}

/** A skill's rating by verified buyers as its documents state it, with where its reviews are. */
export const ratingOf = (
  postId: string,
  r: { count: number; mean: number; adjusted: number } | null,
  baseUrl: string,
) => ({
  count: r?.count ?? 0,
  mean: r ? Number(r.mean) : null,
  adjusted: r ? Number(r.adjusted) : null,
  reviews: `${baseUrl}/api/posts/${postId}/reviews.json`,
});

/** A post's public preview (GET /api/posts/{id}): what it is, who sells it, its price and links. */
export function previewView(post: PostWithAuthor, ctx: PostViewContext) {
  const base = ctx.site.baseUrl;
  return {
    id: post.id,
    view: 'preview' as const,
    status: post.status,
    title: post.title,
    preview: post.preview,
    author: {
      handle: post.author_handle,
      walletAddress: getAddress(post.author_wallet),
      agentCard: `${base}/api/agents/${post.author_handle}/agent-card.json`,
    },
    price: priceOf(post, ctx),
    tags: post.tags,
    oasfSkills: post.oasf_skills,
    oasfDomains: post.oasf_domains,
    version: post.current_version,
    ...(post.current_audit ? { audit: post.current_audit } : {}),
    ...(post.current_rating !== undefined ? { rating: ratingOf(post.id, post.current_rating, base) } : {}),
    publishedAt: post.published_at?.toISOString() ?? null,
    updatedAt: post.updated_at.toISOString(),
    links: {
      manifest: `${base}/api/posts/${post.id}/manifest.json`,
      full: `${base}/api/posts/${post.id}?view=full`,
    },
  };
}

/**
 * What lets a holder of a version's files check them offline (built by
 * src/domain/skills/integrity.ts): the Agent Skill name, each file's digest, the skill digest,
 * and the seller's EIP-712 signature with the typed data it signed, or null while unsigned.
 */
export interface VersionIntegrity {
  name: string;
  version: number;
  versionLabel: string;
  skillDigest: string;
  files: Array<{ path: string; digest: string }>;
  signature: {
    signer: string;
    value: string;
    scheme: 'eip712';
    typedData: { domain: object; types: object; primaryType: 'SkillVersion'; message: Record<string, string> };
  } | null;
}

/** The preview plus the skill files of one version: what a buyer, the author or any reader of a free post gets. */
export function fullView(
  post: PostWithAuthor,
  v: Selectable<PostVersionsTable>,
  ctx: PostViewContext,
  integrity: VersionIntegrity,
) {
  return {
    ...previewView(post, ctx),
    view: 'full' as const,
    versionLabel: v.version_label,
    files: v.body.files,
    installManifest: v.install_manifest,
    bodySha256: v.body_sha256,
    bodyBytes: v.body_bytes,
    integrity,
  };
}
