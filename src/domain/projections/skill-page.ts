import type { PostViewContext } from '../../documents/post.renderer.js';
import { postManifestDocument } from '../../documents/posts/post-manifest.document.js';
import { skillPageDocument } from '../../documents/pages/pages.document.js';
import { jsonBytes } from '../../documents/document.js';
import { findPostWithAuthor, findVersion } from '../../data/posts.repository.js';
import { renderSkillPageOf } from '../pages/skill-page.js';
import { publishDocuments, removeDocument, type PublishDeps } from '../publishing/publish-document.js';
import { versionIntegrity } from '../skills/integrity.js';

/**
 * Publishes a published post's manifest and its page, or removes both once the post is not
 * published. An unpublish that ran while they were rendered wins: the post is read again after
 * the write.
 */
export async function publishPostManifest(deps: PublishDeps & PostViewContext, postId: string) {
  const post = await findPostWithAuthor(deps.db, postId);
  const key = postManifestDocument.key({ postId });
  const pageKey = skillPageDocument.key({ postId });
  const remove = async () => {
    const [removed] = await Promise.all([removeDocument(deps, key), removeDocument(deps, pageKey)]);
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
  const [manifest, page] = await publishDocuments(deps, [
    { document: postManifestDocument, key, body: jsonBytes(doc) },
    { document: skillPageDocument, key: pageKey, body: await renderSkillPageOf(deps.db, post, version, deps.site) },
  ]);
  const now = await findPostWithAuthor(deps.db, postId);
  if (now?.status !== 'published') return remove();
  return { manifest: manifest?.outcome, page: page?.outcome };
}
