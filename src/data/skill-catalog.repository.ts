import { sql } from 'kysely';
import type { Executor } from './db.js';

/** A published skill as the MCP server lists it: its post, and the head of its current SKILL.md. */
export interface CatalogSkill {
  id: string;
  title: string;
  preview: string;
  price_atomic: string;
  author_handle: string;
  current_version: number;
  published_at: Date | null;
  /** The Agent Skill name of the current version (its SKILL.md frontmatter `name`). */
  skill_name: string;
  /** The first 4 KiB of the current version's SKILL.md (its frontmatter), or null without one. */
  skill_md_head: string | null;
}

/** How much of SKILL.md is read to find its frontmatter: the spec caps `description` at 1024 characters. */
const HEAD_CHARS = 4096;

/**
 * The most recently published skills, newest first, at most `limit`: enough of each to name it
 * (the frontmatter of its SKILL.md) without reading its files.
 */
export async function listPublishedSkills(db: Executor, limit: number): Promise<CatalogSkill[]> {
  const rows = await db
    .selectFrom('posts')
    .innerJoin('agents', 'agents.id', 'posts.author_id')
    .innerJoin('post_versions', (join) =>
      join.onRef('post_versions.post_id', '=', 'posts.id').onRef('post_versions.version', '=', 'posts.current_version'),
    )
    .where('posts.status', '=', 'published')
    .select([
      'posts.id',
      'posts.title',
      'posts.preview',
      'posts.price_atomic',
      'posts.current_version',
      'posts.published_at',
      'agents.handle as author_handle',
      'post_versions.skill_name',
      sql<
        string | null
      >`left(jsonb_path_query_first(post_versions.body, '$.files[*] ? (@.path == "SKILL.md").content') #>> '{}', ${HEAD_CHARS})`.as(
        'skill_md_head',
      ),
    ])
    .orderBy('posts.published_at', 'desc')
    .orderBy('posts.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, price_atomic: String(r.price_atomic) }));
}
