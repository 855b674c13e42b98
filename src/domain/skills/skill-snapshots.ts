import { readFrontmatter, SKILL_DESCRIPTION_MAX } from '@skill-market/skill-protocol/skill-frontmatter';
import type { Executor } from '../../data/db.js';
import { findPostWithAuthor, findVersion } from '../../data/posts.repository.js';
import { jsonBytes } from '../../documents/document.js';
import { skillArchiveDocument } from '../../documents/skills/skill-archive.document.js';
import { renderSkillVersions, skillSnapshotDocument } from '../../documents/skills/skill-versions.document.js';
import { NotFoundError } from '../../platform/errors.js';
import { publishDocument, removeDocument, type PublishDeps } from '../publishing/publish-document.js';
import { SKILL_NAME_PATTERN } from './agent-skill.js';
import { archiveDigests, archiveRef, isPortablePath } from './skill-archives.js';

/** A published skill, or 404 `skill_not_found` (an unknown id or a skill that is not published). */
async function publishedSkill(db: Executor, postId: string) {
  const post = await findPostWithAuthor(db, postId);
  if (post?.status !== 'published') throw new NotFoundError('the skill', 'skill_not_found');
  return post;
}

/** A published skill's versions.json (PR #380's `{latest, versions}`). */
export async function skillVersions(db: Executor, postId: string) {
  const post = await publishedSkill(db, postId);
  return renderSkillVersions(post.current_version);
}

/**
 * A skill's own latest index (`/.well-known/agent-skills/skills/{postId}/index.json`, mutable): the
 * snapshot of its current version, so a client pointed at the skill's root reads it as PR #380's
 * canonical index.
 */
export async function latestSkillSnapshot(deps: Parameters<typeof skillSnapshot>[0], postId: string): Promise<string> {
  const post = await publishedSkill(deps.db, postId);
  return skillSnapshot(deps, post.id, post.current_version);
}

/**
 * The immutable snapshot of one version of a published skill, as bytes: its archive is built and
 * published first when missing, and the snapshot is put in the bucket (once: the same version
 * always renders the same bytes, so later publishes are `unchanged`). An unknown version is 404
 * `snapshot_not_found`.
 */
export async function skillSnapshot(
  deps: Pick<PublishDeps, 'db' | 'store' | 'documentsPublished'> & { baseUrl: string },
  postId: string,
  version: number,
): Promise<string> {
  const post = await publishedSkill(deps.db, postId);
  if (version < 1 || version > post.current_version)
    throw new NotFoundError(`version ${version} of the skill`, 'snapshot_not_found');
  const key = skillSnapshotDocument.key({ postId: post.id, version: String(version) });
  // Immutable once put: a request that gets past the edge's cache reads the bucket, never the files.
  const stored = await deps.store.get(key);
  if (stored) return stored.body.toString('utf8');
  const row = await findVersion(deps.db, post.id, version);
  // A version stored before the name and path rules is left out of the index, and has no snapshot.
  if (!SKILL_NAME_PATTERN.test(row.skill_name) || !row.file_digests.every((f) => isPortablePath(f.path)))
    throw new NotFoundError(`version ${version} of the skill`, 'snapshot_not_found');
  const ref = { postId: post.id, version, free: BigInt(post.price_atomic) === 0n };
  const digests = await archiveDigests(deps, [ref]);
  const archiveDigest = digests.get(archiveRef(post.id, version));
  if (!archiveDigest) throw new Error(`no archive for ${post.id}/${version}`);
  const skillMd = row.body.files.find((f) => f.path === 'SKILL.md')?.content ?? '';
  const description = (readFrontmatter(skillMd)?.description?.trim() || post.preview).slice(0, SKILL_DESCRIPTION_MAX);
  const body = jsonBytes(
    skillSnapshotDocument.render({
      baseUrl: deps.baseUrl,
      postId: post.id,
      version,
      versionLabel: row.version_label,
      name: row.skill_name,
      description,
      skillDigest: row.skill_digest,
      files: row.file_digests,
      archiveDigest,
      createdAt: new Date(row.created_at).toISOString(),
    }),
  );
  await publishDocument(deps, { document: skillSnapshotDocument, key, body });
  // A take-down or an unpublish that landed while it was built wins: the copy is taken back out.
  const now = await findPostWithAuthor(deps.db, post.id);
  if (now?.status !== 'published') {
    await removeDocument(deps, key);
    throw new NotFoundError('the skill', 'skill_not_found');
  }
  return body;
}

/**
 * The public discovery artifacts of a skill's versions 1..`currentVersion`: each free archive and
 * each snapshot. A skill that leaves publication (unpublished or taken down) takes them out of the
 * bucket with its manifest, so the edge stops serving its files; a paid archive stays under its
 * private key, which the edge never serves.
 */
export function publicArtifactKeys(postId: string, currentVersion: number): string[] {
  return Array.from({ length: currentVersion }, (_, i) => [
    skillArchiveDocument.key({ postId, version: String(i + 1) }),
    skillSnapshotDocument.key({ postId, version: String(i + 1) }),
  ]).flat();
}
