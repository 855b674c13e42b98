import { z } from 'zod';
import { defineJob } from './job.js';
import { publishPostManifest } from '../src/domain/projections/skill-page.js';

/** Publishes a published post's manifest to the bucket, or removes it once the post is not published. */
export const postManifestJob = defineJob({
  name: 'post-manifest',
  queue: 'documents',
  payload: z.object({ postId: z.guid() }).strict(),
  run: (ctx, { postId }) => publishPostManifest(ctx, postId),
});
