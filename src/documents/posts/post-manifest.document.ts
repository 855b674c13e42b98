import type { Selectable } from 'kysely';
import type { PostVersionsTable } from '../../data/schema.js';
import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_SITE, EXAMPLE_TIME } from '../examples.js';
import { renderPostManifest } from '../post-manifest.renderer.js';
import { auditSummarySchema } from './skill-audit.document.js';
import type { PostViewContext, PostWithAuthor, VersionIntegrity } from '../post.renderer.js';
import { anyObject, arrayOf, boolean, integer, nullable, object, string } from '../schema-parts.js';

export interface PostManifestView {
  post: PostWithAuthor;
  version: Selectable<PostVersionsTable>;
  ctx: PostViewContext;
  integrity: VersionIntegrity;
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
  skill_name: 'pdf-tables',
  first_published_at: new Date(EXAMPLE_TIME),
  published_at: new Date(EXAMPLE_TIME),
  created_at: new Date(EXAMPLE_TIME),
  updated_at: new Date(EXAMPLE_TIME),
  removal: null,
  author_handle: 'acme-extractor',
  author_wallet: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
};
const SKILL_MD = '---\nname: pdf-tables\ndescription: Extract every table of a PDF as CSV.\n---\n# PDF tables\n';
const SKILL_DIGEST = `sha256:${'c'.repeat(64)}`;
const version: Selectable<PostVersionsTable> = {
  post_id: post.id,
  version: 1,
  version_label: '1.0.0',
  body: { files: [{ path: 'SKILL.md', content: SKILL_MD }] },
  body_sha256: 'a'.repeat(64),
  body_bytes: SKILL_MD.length,
  install_manifest: { type: 'npm', package: '@acme/pdf-tables' },
  created_at: new Date(EXAMPLE_TIME),
  skill_name: 'pdf-tables',
  file_digests: [{ path: 'SKILL.md', digest: SKILL_DIGEST }],
  skill_digest: `sha256:${'b'.repeat(64)}`,
  signer: null,
  signature: null,
  signed_at: null,
  audit_verdict: 'pass',
  audit_rules_version: 1,
  audit_report: null,
  audited_at: new Date(EXAMPLE_TIME),
  audit_override: null,
  removal: null,
};
const integrity: VersionIntegrity = {
  name: 'pdf-tables',
  version: 1,
  versionLabel: '1.0.0',
  skillDigest: version.skill_digest,
  files: version.file_digests,
  signature: {
    signer: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    value: `0x${'1'.repeat(130)}`,
    scheme: 'eip712',
    typedData: {
      domain: { name: 'Skill Market', version: '1' },
      types: {
        SkillVersion: [
          { name: 'postId', type: 'string' },
          { name: 'version', type: 'uint256' },
          { name: 'name', type: 'string' },
          { name: 'digest', type: 'string' },
        ],
      },
      primaryType: 'SkillVersion',
      message: { postId: post.id, version: '1', name: 'pdf-tables', digest: version.skill_digest },
    },
  },
};
const ctx: PostViewContext = {
  site: EXAMPLE_SITE,
  chain: {
    chainId: 84532,
    usdc: { address: EXAMPLE_SITE.usdcAddress as `0x${string}`, decimals: 6, name: 'USDC', version: '2' },
  },
};
const paid = renderPostManifest(post, version, ctx, integrity);
const free = renderPostManifest({ ...post, price_atomic: '0' }, { ...version, install_manifest: null }, ctx, {
  ...integrity,
  signature: null,
});

const digest = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' };

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
      skillDigest: digest,
      installable: boolean,
      installType: nullable(string),
    }),
    integrity: object({
      name: string,
      version: integer,
      versionLabel: string,
      skillDigest: digest,
      files: arrayOf(object({ path: string, digest })),
      signature: nullable(
        object({
          signer: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' },
          value: { type: 'string', pattern: '^0x[0-9a-fA-F]+$' },
          scheme: { const: 'eip712' },
          typedData: object({
            domain: anyObject,
            types: anyObject,
            primaryType: { const: 'SkillVersion' },
            message: anyObject,
          }),
        }),
      ),
    }),
    audit: auditSummarySchema,
    rating: object({
      count: integer,
      mean: { type: ['number', 'null'] },
      adjusted: { type: ['number', 'null'] },
      reviews: string,
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
      { ...paid, integrity: { ...paid.integrity, skillDigest: 'md5:0' } },
      { ...paid, audit: { ...paid.audit, verdict: 'clean' } },
    ],
  },
  render: (v: PostManifestView) => renderPostManifest(v.post, v.version, v.ctx, v.integrity),
});
