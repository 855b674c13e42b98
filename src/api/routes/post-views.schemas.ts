import { z } from 'zod';
import { VersionSignature } from '../../domain/posts/post.schemas.js';

/** The request and response shapes of the posts routes, as the OpenAPI document states them. */

export const SKILL_422 =
  'The files are not a valid Agent Skill (agent_skill_invalid), a file path is unsafe (file_path_unsafe), a file is not text (file_not_text) ' +
  'or the version signature does not verify (version_signature_invalid); `errors` lists each field and rule';
export const PostId = z.object({ postId: z.string().max(64).describe('post id (UUID)') });
export const PostVersion = PostId.extend({
  version: z.coerce.number().int().min(1).max(2_147_483_647).describe('the version number (1, 2, …)'),
});
const Digest = z.string().describe('sha256:<64 hex>');
export const Integrity = z
  .object({
    name: z.string(),
    version: z.number(),
    versionLabel: z.string(),
    skillDigest: Digest,
    files: z.array(z.object({ path: z.string(), digest: Digest })),
    signature: z
      .object({
        signer: z.string(),
        value: z.string(),
        scheme: z.literal('eip712'),
        typedData: z.object({
          domain: z.record(z.string(), z.unknown()),
          types: z.record(z.string(), z.unknown()),
          primaryType: z.literal('SkillVersion'),
          message: z.record(z.string(), z.string()),
        }),
      })
      .nullable(),
  })
  .describe(
    "the version's Agent Skill name, file digests, skill digest and the seller's EIP-712 signature (null until signed), checkable offline",
  );

const Price = z.object({
  amount: z.string(),
  asset: z.string(),
  decimals: z.number(),
  network: z.string(),
  payTo: z.string(),
  free: z.boolean(),
});
const Preview = z.object({
  id: z.string(),
  view: z.enum(['preview', 'full']),
  status: z.enum(['draft', 'published', 'unpublished']),
  title: z.string(),
  preview: z.string(),
  author: z.object({ handle: z.string(), walletAddress: z.string(), agentCard: z.string() }),
  price: Price,
  tags: z.array(z.string()),
  oasfSkills: z.array(z.string()),
  oasfDomains: z.array(z.string()),
  version: z.number(),
  publishedAt: z.string().nullable(),
  updatedAt: z.string(),
  links: z.object({ manifest: z.string(), full: z.string() }),
});
export const Full = Preview.extend({
  versionLabel: z.string().optional(),
  files: z.array(z.object({ path: z.string(), content: z.string() })).optional(),
  installManifest: z.record(z.string(), z.unknown()).nullable().optional(),
  bodySha256: z.string().optional(),
  bodyBytes: z.number().optional(),
  integrity: Integrity.optional(),
}).describe('preview members, plus the files, install manifest and integrity for view=full');
export const PublishBody = z
  .object({
    ownershipProof: z
      .string()
      .regex(/^0x[0-9a-fA-F]{130,4096}$/, 'must be a 0x-prefixed hex signature')
      .optional()
      .describe("this origin signed with personal_sign by the author's wallet, for x402 crawlers"),
    versionSignature: VersionSignature.optional(),
  })
  .strict()
  .optional();
export const Manifest = z
  .record(z.string(), z.unknown())
  .describe('skill manifest: metadata, price and paywall, content digest; never the body (docs/posts.md)');
