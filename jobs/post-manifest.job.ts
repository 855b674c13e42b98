import { z } from 'zod';
import { defineJob } from './job.js';
import { DOCUMENTS, postManifestKey } from '../src/documents/catalog.js';
import { renderPostManifest } from '../src/documents/post-manifest.renderer.js';
import { jsonBytes, publishDocument, removeDocument } from '../src/domain/documents/publish-document.js';
import { findPostWithAuthor, findVersion } from '../src/data/posts.repository.js';

/** Publishes a published post's manifest to the bucket, or removes it once the post is not published. */
export const postManifestJob = defineJob({
  name: 'post-manifest',
  queue: 'documents',
  payload: z.object({ postId: z.guid() }).strict(),
  async run(ctx, { postId }) {
    const post = await findPostWithAuthor(ctx.db, postId);
    const key = postManifestKey(postId);
    if (!post || post.status !== 'published') return { removed: await removeDocument(ctx, key) };
    const version = await findVersion(ctx.db, post.id, post.current_version);
    const doc = renderPostManifest(post, version, { site: ctx.site, chain: ctx.chain });
    const outcome = (await publishDocument(ctx, { key, body: jsonBytes(doc), kind: DOCUMENTS.postManifest })).outcome;
    // An unpublish that ran while this job rendered must win: check again after the write.
    const now = await findPostWithAuthor(ctx.db, postId);
    if (now?.status !== 'published') return { removed: await removeDocument(ctx, key) };
    return { manifest: outcome };
  },
});
