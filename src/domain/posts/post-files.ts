import { createHash } from 'node:crypto';
import type { VersionSignatureRow } from '../../data/posts.repository.js';
import { AppError } from '../../platform/errors.js';
import { validateAgentSkill } from '../skills/agent-skill.js';
import { fileDigests, skillDigest } from '@skill-market/skill-protocol/skill-digest';
import { MAX_BODY_BYTES, type CreatePost, type NewVersion } from './post.schemas.js';

class BodyTooLargeError extends AppError {
  constructor(bytes: number) {
    super(413, 'post_body_too_large', `The skill files are ${bytes} bytes; the limit is ${MAX_BODY_BYTES} bytes`);
  }
}

function measureBody(body: CreatePost['body']) {
  const canonical = JSON.stringify(body);
  const bytes = body.files.reduce((n, f) => n + Buffer.byteLength(f.content, 'utf8'), 0);
  if (bytes > MAX_BODY_BYTES) throw new BodyTooLargeError(bytes);
  return { bytes, sha256: createHash('sha256').update(canonical).digest('hex') };
}

/**
 * A version's files checked (size, then as an Agent Skill) and digested: its name, the digest
 * of each file and the skill digest, stored with it and never recomputed.
 */
export function prepareFiles(body: CreatePost['body']) {
  const measured = measureBody(body);
  const skill = validateAgentSkill(body.files);
  return {
    measured,
    name: skill.name,
    fileDigests: fileDigests(body.files).map(({ path, digest }) => ({ path, digest })),
    skillDigest: skillDigest(body.files),
  };
}
export type PreparedFiles = ReturnType<typeof prepareFiles>;

export const versionRow = (
  postId: string,
  version: number,
  input: Omit<NewVersion, 'versionSignature'>,
  files: PreparedFiles,
  signed?: VersionSignatureRow,
) => ({
  postId,
  version,
  versionLabel: input.version,
  body: input.body,
  bodySha256: files.measured.sha256,
  bodyBytes: files.measured.bytes,
  installManifest: input.installManifest,
  skillName: files.name,
  fileDigests: files.fileDigests,
  skillDigest: files.skillDigest,
  signed,
});
