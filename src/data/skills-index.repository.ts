import { sql } from 'kysely';
import { z } from 'zod';
import type { Db, Executor } from './db.js';

const LOCK = sql`hashtextextended('skills_index', 8004)`;

/**
 * Runs `fn` on one connection that holds the discovery index's lock, which every process takes to
 * publish the index: the publish that takes it later reads later, so the index put last is the
 * newest render. A session lock, not a transaction: `fn` puts the index in the bucket meanwhile,
 * and no transaction stays open across that. `fn` works through the connection it is given
 * (embedded PGlite has one); a connection that is lost releases the lock with it.
 */
export function withSkillsIndexLock<T>(db: Db, fn: (conn: Db) => Promise<T>): Promise<T> {
  return db.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(${LOCK})`.execute(conn);
    try {
      return await fn(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(${LOCK})`.execute(conn);
    }
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
