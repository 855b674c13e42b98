import { defineDocument } from '../document.js';

/** A year: the archive of a version never changes, so caches keep it as long as they like. */
const FOREVER = 31_536_000;

/**
 * /.well-known/agent-skills/archives/{postId}/{version}.tar.gz: the deterministic tar.gz of one
 * version of a free skill (src/domain/skills/skill-archive.ts), the `type: "archive"` artifact of
 * the discovery index. Published once per version and never rewritten; a paid skill's archive is
 * kept out of the public bucket paths, and its path answers 402 (docs/skills.md).
 */
export const skillArchiveDocument = defineDocument({
  id: 'AgentSkillArchive',
  path: '/.well-known/agent-skills/archives/{postId}/{version}.tar.gz',
  contentType: 'application/gzip',
  cache: { maxAge: FOREVER, staleWhileRevalidate: FOREVER },
  examples: { valid: [], invalid: [] },
  render: (bytes: Buffer) => bytes,
});

/**
 * Where a paid skill's archive is kept: a bucket key outside every path the edge serves, so its
 * bytes (the paid files) never leave the bucket except through the API.
 */
export const privateArchiveKey = (postId: string, version: number) =>
  `private/agent-skills/archives/${postId}/${version}.tar.gz`;
