import type { Selectable } from 'kysely';
import type { PostVersionsTable } from '../../data/schema.js';
import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_SITE, EXAMPLE_TIME } from '../examples.js';
import { renderPostManifest } from '../post-manifest.renderer.js';
import type { PostViewContext, PostWithAuthor } from '../post.renderer.js';
import { anyObject, arrayOf, boolean, integer, nullable, object, string } from '../schema-parts.js';

export interface PostManifestView {
  post: PostWithAuthor;
  version: Selectable<PostVersionsTable>;
  ctx: PostViewContext;
}

const post: PostWithAuthor = {
  id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  author_id: '0b9f3c52-7c1e-4d8a-9f0e-2a1b3c4d5e6f',
  status: 'published',
  title: 'PDF tables',
  preview: 'Extract every table of a PDF as CSV.',
  price_atomic: '1500000',
  tags: ['pdf'],
  oasf_skills: [],
  oasf_domains: [],
  current_version: 1,
  first_published_at: new Date(EXAMPLE_TIME),
  published_at: new Date(EXAMPLE_TIME),
  created_at: new Date(EXAMPLE_TIME),
  updated_at: new Date(EXAMPLE_TIME),
  author_handle: 'acme-extractor',
  author_wallet: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
};
const version: Selectable<PostVersionsTable> = {
  post_id: post.id,
  version: 1,
  version_label: '1.0.0',
  body: { files: [{ path: 'SKILL.md', content: '# PDF tables' }] },
  body_sha256: 'a'.repeat(64),
  body_bytes: 12,
  install_manifest: { type: 'npm', package: '@acme/pdf-tables' },
  created_at: new Date(EXAMPLE_TIME),
};
const ctx: PostViewContext = {
  site: EXAMPLE_SITE,
  chain: {
    chainId: 84532,
    usdc: { address: EXAMPLE_SITE.usdcAddress as `0x${string}`, decimals: 6, name: 'USDC', version: '2' },
  },
};
const paid = renderPostManifest(post, version, ctx);
const free = renderPostManifest({ ...post, price_atomic: '0' }, { ...version, install_manifest: null }, ctx);

/** /api/posts/{postId}/manifest.json: what a skill is, what it costs and how to pay, never its body. */
export const postManifestDocument = defineDocument({
  id: 'PostManifest',
  path: '/api/posts/{postId}/manifest.json',
  contentType: JSON_TYPE,
  cache: { maxAge: 60, staleWhileRevalidate: 600 },
  schema: object({
    id: string,
    title: string,
    preview: string,
    author: object({ handle: string, walletAddress: string, agentCard: string }),
    version: integer,
    versionLabel: string,
    tags: arrayOf(string),
    price: object({ amount: string, asset: string, network: string, payTo: string, free: boolean, display: string }),
    paywall: nullable(object({ protocol: { const: 'x402' }, amount: string, payTo: string, resource: string })),
    content: object({
      files: integer,
      bytes: integer,
      sha256: string,
      installable: boolean,
      installType: nullable(string),
    }),
    links: anyObject,
    publishedAt: nullable(string),
    updatedAt: string,
  }),
  examples: {
    valid: [paid, free],
    invalid: [
      { ...paid, price: { ...paid.price, amount: 1500000 } },
      { ...paid, content: undefined },
    ],
  },
  render: (v: PostManifestView) => renderPostManifest(v.post, v.version, v.ctx),
});
