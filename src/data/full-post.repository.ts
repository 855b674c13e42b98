import { sql } from 'kysely';
import { z } from 'zod';
import { executePrepared, type Executor } from './db.js';
import {
  postsWithAuthor,
  StoredBody,
  StoredDigests,
  StoredManifest,
  UUID,
  type PostVersion,
  type PostWithAuthor,
} from './posts.repository.js';

/** A version row as `to_jsonb` gives it: its times as ISO text. */
const VersionJson = z.object({
  post_id: z.string(),
  version: z.number(),
  version_label: z.string(),
  body: StoredBody,
  body_sha256: z.string(),
  body_bytes: z.number(),
  install_manifest: StoredManifest,
  created_at: z.coerce.date(),
  skill_name: z.string(),
  file_digests: StoredDigests,
  skill_digest: z.string(),
  signer: z.string().nullable(),
  signature: z.string().nullable(),
  signed_at: z.coerce.date().nullable(),
});

/**
 * A post with its author's public fields and its current version, in one statement (the full
 * view, and a purchase, read both); undefined for no such post (also for ids that are not UUIDs).
 */
export async function findPostWithCurrentVersion(
  db: Executor,
  postId: string,
): Promise<{ post: PostWithAuthor; version: PostVersion } | undefined> {
  if (!UUID.test(postId)) return undefined;
  const [row] = await executePrepared(
    db,
    postsWithAuthor(db)
      .select((eb) =>
        eb
          .selectFrom('post_versions as v')
          .select(sql<unknown>`to_jsonb(v)`.as('row'))
          .whereRef('v.post_id', '=', 'posts.id')
          .whereRef('v.version', '=', 'posts.current_version')
          .as('current_version_row'),
      )
      .where('posts.id', '=', postId.toLowerCase()),
  );
  if (!row) return undefined;
  const { current_version_row: version, ...post } = row;
  if (!version) throw new Error(`post ${post.id} has no version ${post.current_version}`);
  return { post, version: VersionJson.parse(version) };
}
