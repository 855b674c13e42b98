import type { ColumnType } from 'kysely';
import { z } from 'zod';

/**
 * The shapes of JSON columns, which the database does not state: the generated table types
 * (schema.generated.ts, scripts/db-types.ts) use them. Written either as the value or as JSON text.
 */
export type JsonColumn<T> = ColumnType<T, T | string, T | string>;

export type JsonRecord = Record<string, unknown>;

/** `agents.capabilities`: the agent's declared endpoints. */
export interface Capabilities {
  mcp?: string;
  a2a?: string;
  x402?: string;
}

export interface PostFile {
  path: string;
  content: string;
}

/** `post_versions.body`: the files of a skill version. */
export interface SkillBody {
  files: PostFile[];
}

/** One entry of `post_versions.file_digests` (path-ordered `sha256:<hex>` digests). */
export interface FileDigest {
  path: string;
  digest: string;
}

/** An `install_manifest` column (agents, posts) as read: a JSON object or null, validated when written. */
export const StoredManifest = z.record(z.string(), z.unknown()).nullable();
