import { z } from 'zod';
import type { Executor } from './db.js';

/** A published skill with its seller, as the discovery index lists it. */
export interface IndexedPostRow {
  id: string;
  title: string;
  preview: string;
  price_atomic: string;
  current_version: number;
  updated_at: Date;
  author_handle: string;
  author_wallet: string;
}

/**
 * One version of a published skill: its files, and the seller's signature where the version
 * carries one (columns a schema without signatures lacks read as absent).
 */
export interface IndexedVersionRow {
  post_id: string;
  version: number;
  version_label: string;
  files: { path: string; content: string }[];
  signer: string | null;
  signature: string | null;
  created_at: Date;
}

const StoredBody = z.object({ files: z.array(z.object({ path: z.string(), content: z.string() })) });

/** Every published post with its seller, oldest first (a stable order, so the index renders alike). */
export function findPublishedPosts(db: Executor): Promise<IndexedPostRow[]> {
  return db
    .selectFrom('posts')
    .innerJoin('agents', 'agents.id', 'posts.author_id')
    .select([
      'posts.id',
      'posts.title',
      'posts.preview',
      'posts.price_atomic',
      'posts.current_version',
      'posts.updated_at',
      'agents.handle as author_handle',
      'agents.wallet_address as author_wallet',
    ])
    .where('posts.status', '=', 'published')
    .orderBy('posts.first_published_at')
    .orderBy('posts.id')
    .execute() as Promise<IndexedPostRow[]>;
}

/** Every version of the given posts, newest first within a post. */
export async function findVersionsOf(db: Executor, postIds: readonly string[]): Promise<IndexedVersionRow[]> {
  if (!postIds.length) return [];
  const rows = await db
    .selectFrom('post_versions')
    .selectAll()
    .where('post_id', 'in', postIds)
    .orderBy('post_id')
    .orderBy('version', 'desc')
    .execute();
  return rows.map((row) => {
    const signed = row as { signer?: string | null; signature?: string | null };
    return {
      post_id: row.post_id,
      version: row.version,
      version_label: row.version_label,
      files: StoredBody.parse(row.body).files,
      signer: signed.signer ?? null,
      signature: signed.signature ?? null,
      created_at: row.created_at,
    };
  });
}
