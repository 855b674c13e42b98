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
// The answers clients read (the skill-market CLI among them) are declared once, with the client.
export { Integrity, PostFull as Full } from '@skill-market/skill-protocol/responses';
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
