import type { Executor } from '../../data/db.js';
import { findPublishedIdentities, savePublishedRecords } from '../../data/documents.repository.js';
import { findPostWithAuthor, findVersion } from '../../data/posts.repository.js';
import type { Db } from '../../data/db.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { paidArchiveDigestKey, skillArchiveDocument } from '../../documents/skills/skill-archive.document.js';
import { mapBounded } from '../../platform/bounded-map.js';
import { NotFoundError } from '../../platform/errors.js';
import { publishDocument, removeDocument, type PublishDeps } from '../publishing/publish-document.js';
import { artifactDigest, skillArchive } from './skill-archive.js';

/** A version whose archive is wanted, and whether its skill is free (a free one is public). */
export interface ArchivedVersion {
  postId: string;
  version: number;
  free: boolean;
}

/**
 * The key of a version's archive in the bookkeeping of published documents: the public path of a
 * free skill's archive (a bucket object), or for a paid skill a key that records its digest only.
 */
export const archiveKey = (v: ArchivedVersion) =>
  v.free
    ? skillArchiveDocument.key({ postId: v.postId, version: String(v.version) })
    : paidArchiveDigestKey(v.postId, v.version);

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
    if (v.free)
      await publishDocument(
        { db: deps.db as PublishDeps['db'], store, documentsPublished: deps.documentsPublished },
        { document: skillArchiveDocument, key: archiveKey(v), body: built.bytes },
      );
    // A paid skill's archive holds the paid files: only its digest is recorded, its bytes go nowhere.
    else
      await savePublishedRecords(
        deps.db,
        [
          {
            key: archiveKey(v),
            contentType: skillArchiveDocument.contentType,
            sha256: built.digest.slice('sha256:'.length),
            bytes: built.bytes.length,
            contentHash: null,
          },
        ],
        { written: false },
      );
    digests.set(archiveRef(v.postId, v.version), built.digest);
  });
  // A take-down, an unpublish or a new price may have landed while the archives were built: what
  // it removed must not come back, so each skill is read again after the writes.
  const builtPublic = [...new Set(missing.filter((v) => v.free).map((v) => v.postId))];
  await mapBounded(builtPublic, BUILDS_IN_FLIGHT, async (postId) => {
    const post = await findPostWithAuthor(deps.db, postId);
    if (post?.status !== 'published' || BigInt(post.price_atomic) !== 0n)
      await withdrawPublicArchives({ db: deps.db as Db, store }, postId, post?.current_version ?? 0);
  });
  return digests;
}

/**
 * Takes a skill's public archives out of the bucket (those of versions 1..`currentVersion` that
 * were published): for a skill no longer published, or no longer free, whose archives hold files
 * that are not public any more. How many there were.
 */
export async function withdrawPublicArchives(
  deps: { db: Db; store: ObjectStore },
  postId: string,
  currentVersion: number,
): Promise<number> {
  const keys = Array.from({ length: currentVersion }, (_, i) => archiveKey({ postId, version: i + 1, free: true }));
  const published = await findPublishedIdentities(deps.db, keys);
  await Promise.all([...published.keys()].map((key) => removeDocument(deps, key)));
  return published.size;
}

/**
 * The discovery RFC's path rule (the index's): relative, printable ASCII without `\ ? # [ ]`, no
 * `.`, `..` or empty segment. A version stored before the path rules may break it; its archive is
 * never built (404), so no archive the market serves holds a path that could leave the folder, and
 * the index leaves such a version out.
 */
const PORTABLE_PATH = /^(?!\/)(?!.*\/\/)(?!(.*\/)?\.\.?(\/|$))(?!.*\/$)[\x20-\x22\x24-\x3E\x40-\x5A\x5E-\x7E]+$/;
export const isPortablePath = (path: string) => PORTABLE_PATH.test(path);

/** A version's archive bytes and digest, built from its stored files. */
export async function buildArchive(db: Executor, v: Pick<ArchivedVersion, 'postId' | 'version'>) {
  const row = await findVersion(db, v.postId, v.version);
  if (!row.body.files.every((f) => isPortablePath(f.path)))
    throw new NotFoundError(`an archive of version ${v.version}`, 'archive_not_found');
  const bytes = skillArchive(row.body.files);
  return { bytes, digest: artifactDigest(bytes), skillName: row.skill_name, files: row.body.files };
}
