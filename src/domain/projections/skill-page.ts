import { skillReviewsDocument } from '../../documents/posts/skill-reviews.document.js';
import { renderReviewsOf } from '../reviews/review-reads.js';
import type { PostViewContext } from '../../documents/post.renderer.js';
import { postManifestDocument } from '../../documents/posts/post-manifest.document.js';
import { skillAuditDocument, storedAudit } from '../../documents/posts/skill-audit.document.js';
import { auditKeysOf } from '../posts/version-audit.use-cases.js';
import { skillPageDocument } from '../../documents/pages/pages.document.js';
import { jsonBytes } from '../../documents/document.js';
import { findPostWithAuthor, findVersion } from '../../data/posts.repository.js';
import { renderSkillPageOf } from '../pages/skill-page.js';
import { publishDocuments, removeDocument, type PublishDeps } from '../publishing/publish-document.js';
import { versionIntegrity } from '../skills/integrity.js';
import { withdrawPublicArchives } from '../skills/skill-archives.js';
import { publicArtifactKeys } from '../skills/skill-snapshots.js';

/**
 * Publishes a published post's manifest and its page, or removes both once the post is not
 * published. An unpublish that ran while they were rendered wins: the post is read again after
 * the write.
 */
export async function publishPostManifest(deps: PublishDeps & PostViewContext, postId: string) {
  const post = await findPostWithAuthor(deps.db, postId);
  const key = postManifestDocument.key({ postId });
  const pageKey = skillPageDocument.key({ postId });
  const reviewsKey = skillReviewsDocument.key({ postId });
  const remove = async () => {
    const [removed] = await Promise.all([
      removeDocument(deps, key),
      removeDocument(deps, pageKey),
      removeDocument(deps, reviewsKey),
      // A skill no longer published shows no audit either: its reports quote its files.
      ...auditKeysOf(postId, post?.current_version ?? 0).map((k) => removeDocument(deps, k)),
      // Nor its archives and snapshots: they carry its files.
      ...publicArtifactKeys(postId, post?.current_version ?? 0).map((k) => removeDocument(deps, k)),
    ]);
    return { removed };
  };
  if (post?.status !== 'published') return remove();
  const version = await findVersion(deps.db, post.id, post.current_version);
  const doc = postManifestDocument.render({
    post,
    version,
    ctx: { site: deps.site, chain: deps.chain },
    integrity: versionIntegrity(post.id, version),
  });
  const audit = storedAudit(version);
  const reviews = await renderReviewsOf(deps.db, deps.site.baseUrl, post.id);
  const [manifest, page] = await publishDocuments(deps, [
    { document: postManifestDocument, key, body: jsonBytes(doc) },
    { document: skillPageDocument, key: pageKey, body: await renderSkillPageOf(deps.db, post, version, deps.site) },
    ...(reviews ? [{ document: skillReviewsDocument, key: reviewsKey, body: jsonBytes(reviews) }] : []),
    // The current version's audit, once the skill is published (a draft's audit is not public).
    ...(audit
      ? [
          {
            document: skillAuditDocument,
            key: skillAuditDocument.key({ postId, version: String(version.version) }),
            body: jsonBytes(
              skillAuditDocument.render({
                postId: post.id,
                version: version.version,
                skillDigest: version.skill_digest,
                audit,
                baseUrl: deps.site.baseUrl,
              }),
            ),
          },
        ]
      : []),
  ]);
  const now = await findPostWithAuthor(deps.db, postId);
  if (now?.status !== 'published') return remove();
  // A skill that was free and now has a price: its public archives are paid files now.
  if (BigInt(now.price_atomic) !== 0n) await withdrawPublicArchives(deps, postId, now.current_version);
  return { manifest: manifest?.outcome, page: page?.outcome };
}
