import type { PostViewContext } from '../../documents/post.renderer.js';
import { postManifestDocument } from '../../documents/posts/post-manifest.document.js';
import { jsonBytes } from '../../documents/document.js';
import { findPostWithAuthor, findVersion } from '../../data/posts.repository.js';
import { publishDocument, removeDocument, type PublishDeps } from './publish-document.js';
import { versionIntegrity } from '../skills/integrity.js';

/**
 * Publishes a published post's manifest, or removes it once the post is not published. An
 * unpublish that ran while the manifest was rendered wins: the post is read again after the write.
 */
export async function publishPostManifest(deps: PublishDeps & PostViewContext, postId: string) {
  const post = await findPostWithAuthor(deps.db, postId);
  const key = postManifestDocument.key({ postId });
  if (post?.status !== 'published') return { removed: await removeDocument(deps, key) };
  const version = await findVersion(deps.db, post.id, post.current_version);
  const doc = postManifestDocument.render({
    post,
    version,
    ctx: { site: deps.site, chain: deps.chain },
    integrity: versionIntegrity(post.id, version),
  });
  const { outcome } = await publishDocument(deps, { document: postManifestDocument, key, body: jsonBytes(doc) });
  const now = await findPostWithAuthor(deps.db, postId);
  if (now?.status !== 'published') return { removed: await removeDocument(deps, key) };
  return { manifest: outcome };
}
