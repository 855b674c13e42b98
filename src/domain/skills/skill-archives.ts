import type { Executor } from '../../data/db.js';
import { findPublishedIdentities } from '../../data/documents.repository.js';
import { findVersion } from '../../data/posts.repository.js';
import { privateArchiveKey, skillArchiveDocument } from '../../documents/skills/skill-archive.document.js';
import { mapBounded } from '../../platform/bounded-map.js';
import { NotFoundError } from '../../platform/errors.js';
import { publishDocument, type PublishDeps } from '../publishing/publish-document.js';
import { artifactDigest, skillArchive } from './skill-archive.js';

/** A version whose archive is wanted, and whether its skill is free (a free one is public). */
export interface ArchivedVersion {
  postId: string;
  version: number;
  free: boolean;
}

/** The bucket key of a version's archive: the public path for a free skill, a private key for a paid one. */
export const archiveKey = (v: ArchivedVersion) =>
  v.free
    ? skillArchiveDocument.key({ postId: v.postId, version: String(v.version) })
    : privateArchiveKey(v.postId, v.version);

/** `postId/version`: how the digests are keyed. */
export const archiveRef = (postId: string, version: number) => `${postId}/${version}`;

/** Archives built at once when several are missing (each reads one version's files). */
const BUILDS_IN_FLIGHT = 4;

/**
 * The `sha256:<hex>` of each version's archive, by `postId/version`. An archive is built from the
 * version's stored files and put in the bucket the first time it is asked for, and never again:
 * the bookkeeping row of its key holds the SHA-256 of the bytes put, so a render reads the digests
 * of a hundred skills with one query and no file. With `store` absent, only archives already
 * published are answered (a reader that cannot publish).
 */
export async function archiveDigests(
  deps: { db: Executor } & Partial<Pick<PublishDeps, 'store' | 'documentsPublished'>>,
  versions: readonly ArchivedVersion[],
): Promise<Map<string, string>> {
  const keys = versions.map(archiveKey);
  const published = await findPublishedIdentities(deps.db, keys);
  const digests = new Map<string, string>();
  const missing: ArchivedVersion[] = [];
  versions.forEach((v, i) => {
    const sha = published.get(keys[i] ?? '')?.identity;
    if (sha) digests.set(archiveRef(v.postId, v.version), `sha256:${sha}`);
    else missing.push(v);
  });
  const { store } = deps;
  if (!store || !missing.length) return digests;
  await mapBounded(missing, BUILDS_IN_FLIGHT, async (v) => {
    const built = await buildArchive(deps.db, v);
    // Two processes building the same version put the same bytes: the archive is a function of the files.
    await publishDocument(
      { db: deps.db as PublishDeps['db'], store, documentsPublished: deps.documentsPublished },
      { document: skillArchiveDocument, key: archiveKey(v), body: built.bytes },
    );
    digests.set(archiveRef(v.postId, v.version), built.digest);
  });
  return digests;
}

/**
 * The discovery RFC's path rule (the index's): relative, printable ASCII without `\ ? # [ ]`, no
 * `.`, `..` or empty segment. A version stored before the path rules may break it; its archive is
 * never built (404), so no archive the market serves holds a path that could leave the folder.
 */
const PORTABLE_PATH = /^(?!\/)(?!.*\/\/)(?!(.*\/)?\.\.?(\/|$))(?!.*\/$)[\x20-\x22\x24-\x3E\x40-\x5A\x5E-\x7E]+$/;

/** A version's archive bytes and digest, built from its stored files. */
export async function buildArchive(db: Executor, v: Pick<ArchivedVersion, 'postId' | 'version'>) {
  const row = await findVersion(db, v.postId, v.version);
  if (!row.body.files.every((f) => PORTABLE_PATH.test(f.path)))
    throw new NotFoundError(`an archive of version ${v.version}`, 'archive_not_found');
  const bytes = skillArchive(row.body.files);
  return { bytes, digest: artifactDigest(bytes), skillName: row.skill_name, files: row.body.files };
}
