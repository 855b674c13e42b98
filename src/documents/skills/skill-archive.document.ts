import { defineDocument } from '../document.js';

/**
 * /.well-known/agent-skills/archives/{postId}/{version}.tar.gz: the deterministic tar.gz of one
 * version of a free skill (src/domain/skills/skill-archive.ts), the `type: "archive"` artifact of
 * the discovery index. Published once per version and never rewritten; a paid skill's archive is
 * never put in the bucket, and its path answers 402 (docs/skills.md).
 */
export const skillArchiveDocument = defineDocument({
  id: 'AgentSkillArchive',
  path: '/.well-known/agent-skills/archives/{postId}/{version}.tar.gz',
  contentType: 'application/gzip',
  // The bytes never change, but a skill taken down must leave the caches as soon as its manifest
  // does: the same lifetime, revalidated cheaply (ETag).
  cache: { maxAge: 60, staleWhileRevalidate: 600 },
  examples: { valid: [], invalid: [] },
  render: (bytes: Buffer) => bytes,
});

/**
 * Where the digest of a paid skill's archive is recorded (published_documents), so the index can
 * list it: a bookkeeping key only. The archive holds the paid files, so its bytes are never put in
 * the bucket, whose objects anyone who reaches the bucket may read.
 */
export const paidArchiveDigestKey = (postId: string, version: number) =>
  `digest-only/agent-skills/archives/${postId}/${version}.tar.gz`;
