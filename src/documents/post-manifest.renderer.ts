import type { Selectable } from 'kysely';
import type { PostVersionsTable } from '../data/schema.js';
import { v1NetworkName } from '../platform/chain/networks.js';
import {
  priceOf,
  previewView,
  ratingOf,
  type PostViewContext,
  type PostWithAuthor,
  type VersionIntegrity,
} from './post.renderer.js';
import { formatUsdc } from './site-agent-card.renderer.js';
import { auditSummary, storedAudit } from './posts/skill-audit.document.js';

/**
 * A skill's manifest (seed endpoint 15): what it is, who sells it, what it costs and exactly how
 * to pay, and what the buyer will get (size, digest, installability), never the body itself.
 * Its `integrity` (the Agent Skill name, each file's digest, the skill digest and the seller's
 * signature) lets a buyer check the files it receives against what the seller published.
 * Pure: the same post and version always render the same bytes.
 */
export function renderPostManifest(
  post: PostWithAuthor,
  version: Selectable<PostVersionsTable>,
  ctx: PostViewContext,
  integrity: VersionIntegrity,
) {
  const preview = previewView(post, ctx);
  const price = priceOf(post, ctx);
  const install = version.install_manifest as { type?: string } | null;
  return {
    id: post.id,
    title: post.title,
    preview: post.preview,
    author: preview.author,
    version: post.current_version,
    versionLabel: version.version_label,
    tags: post.tags,
    oasfSkills: post.oasf_skills,
    oasfDomains: post.oasf_domains,
    price: { ...price, display: `${formatUsdc(BigInt(price.amount))} USDC` },
    paywall: price.free
      ? null
      : {
          protocol: 'x402',
          x402Versions: [1, 2],
          scheme: 'exact',
          network: ctx.site.network,
          networkV1: v1NetworkName(ctx.chain.chainId) ?? null,
          asset: price.asset,
          eip712: { name: ctx.chain.usdc.name, version: ctx.chain.usdc.version },
          amount: price.amount,
          payTo: price.payTo,
          resource: preview.links.full,
          howToPay:
            `GET ${preview.links.full} answers 402 with the requirements. Sign an EIP-3009 TransferWithAuthorization of exactly ` +
            `${price.amount} atomic units to ${price.payTo} and repeat the request with it in X-PAYMENT (x402 v1) or ` +
            'PAYMENT-SIGNATURE (x402 v2). Buyers keep access: later reads with your agent JWT need no payment.',
        },
    content: {
      files: (version.body.files ?? []).length,
      bytes: version.body_bytes,
      sha256: version.body_sha256,
      skillDigest: integrity.skillDigest,
      installable: Boolean(install),
      installType: install?.type ?? null,
    },
    integrity,
    // The version's static audit (docs/audit.md): pending until the skill-audit job stored it.
    audit: auditSummary(post.id, version.version, storedAudit(version), ctx.site.baseUrl),
    // Its rating by verified buyers (docs/reputation.md), with where its reviews are.
    rating: ratingOf(post.id, post.current_rating ?? null, ctx.site.baseUrl),
    links: preview.links,
    publishedAt: preview.publishedAt,
    updatedAt: preview.updatedAt,
  };
}
