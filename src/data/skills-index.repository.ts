import { sql, type Transaction } from 'kysely';
import { z } from 'zod';
import type { Db, Executor } from './db.js';
import type { DB } from './schema.js';

/**
 * Runs `fn` in a transaction that holds the discovery index's lock, which every process takes to
 * publish the index: the publish that takes it later reads later, so the index put last is the
 * newest render. `fn` works through the transaction it is given (embedded PGlite has one connection).
 */
export function withSkillsIndexLock<T>(db: Db, fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended('skills_index', 8004))`.execute(trx);
    return fn(trx);
  });
}

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

/** One version of a published skill: its Agent Skill name, digests and the seller's signature, as stored. */
export interface IndexedVersionRow {
  post_id: string;
  version: number;
  version_label: string;
  skill_name: string;
  skill_digest: string;
  file_digests: { path: string; digest: string }[];
  signer: string | null;
  signature: string | null;
  created_at: Date;
}

const StoredDigests = z.array(z.object({ path: z.string(), digest: z.string() }));
const StoredBody = z.object({ files: z.array(z.object({ path: z.string(), content: z.string() })) });

/** Every published post with its seller, first published first (a stable order, so the index renders alike). */
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
    .execute();
}

/** Every version of the given posts, newest first within a post; never their files. */
export async function findVersionsOf(db: Executor, postIds: readonly string[]): Promise<IndexedVersionRow[]> {
  if (!postIds.length) return [];
  const rows = await db
    .selectFrom('post_versions')
    .select([
      'post_id',
      'version',
      'version_label',
      'skill_name',
      'skill_digest',
      'file_digests',
      'signer',
      'signature',
      'created_at',
    ])
    .where('post_id', 'in', postIds)
    .orderBy('post_id')
    .orderBy('version', 'desc')
    .execute();
  return rows.map((row) => ({ ...row, file_digests: StoredDigests.parse(row.file_digests) }));
}

/** The SKILL.md of each post's current version (its frontmatter describes the skill in the index). */
export async function findCurrentSkillMds(db: Executor, postIds: readonly string[]): Promise<Map<string, string>> {
  if (!postIds.length) return new Map();
  const rows = await db
    .selectFrom('post_versions')
    .innerJoin('posts', (join) =>
      join.onRef('posts.id', '=', 'post_versions.post_id').onRef('posts.current_version', '=', 'post_versions.version'),
    )
    .select(['post_versions.post_id', 'post_versions.body'])
    .where('post_versions.post_id', 'in', postIds)
    .execute();
  return new Map(
    rows.map((r) => [r.post_id, StoredBody.parse(r.body).files.find((f) => f.path === 'SKILL.md')?.content ?? '']),
  );
}
