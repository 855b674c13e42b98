import { createHash } from 'node:crypto';
import type { Db } from '../../data/db.js';
import {
  deletePublishedRecord,
  findPublishedIdentities,
  savePublishedRecords,
} from '../../data/documents.repository.js';
import type { AnyPublishedDocument } from '../../documents/document.js';
import { assertValidDocument } from '../../documents/validate.js';
import { mapBounded } from '../../platform/bounded-map.js';
import type { ObjectStore } from '../../platform/object-store.js';

export { jsonBytes } from '../../documents/document.js';
export { stableHash, topStampedHash } from './content-hash.js';

export interface PublishInput {
  /** Which catalogued document this is: its content type, cache policy and schema. */
  document: AnyPublishedDocument;
  key: string;
  /**
   * The bytes, or, for a document with a `contentHash` whose inputs are costly to read, how to
   * read them: called only if the document has to be written.
   */
  body: string | Buffer | (() => Promise<string | Buffer>);
  /**
   * What makes this document different from the last one published, when that is not its bytes:
   * documents stamped with `computedAt` pass a hash of their content without the stamp, so a
   * recompute that changed nothing but the time is skipped.
   */
  contentHash?: string;
  /**
   * Republish even when the content is the same once the published copy is older than this: for
   * documents whose time-derived members (days since, computedAt) are not part of `contentHash`,
   * so they are never more than this much behind.
   */
  refreshAfterMs?: number;
}

export interface PublishResult {
  key: string;
  outcome: 'published' | 'unchanged';
  /** What identifies the content now published under the key (its content hash, or its bytes' SHA-256). */
  identity: string;
}

/** Counts publish outcomes (the `documents_published_total` counter of src/platform/metrics.ts). */
export interface PublishCounter {
  inc(labels: { outcome: PublishResult['outcome'] }, value?: number): void;
}

export interface PublishDeps {
  db: Db;
  store: ObjectStore;
  /** Where outcomes are counted; absent where nothing scrapes them (scripts, tests). */
  documentsPublished?: PublishCounter;
}

/** Bucket writes one publishDocuments call keeps in flight. */
const PUTS_IN_FLIGHT = 16;

const asBuffer = (body: string | Buffer) => (typeof body === 'string' ? Buffer.from(body) : body);
const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');

/**
 * Puts a rendered document in the bucket unless the bucket already holds the same content (see
 * `publishDocuments`, of which this is the one-document case).
 */
export async function publishDocument(deps: PublishDeps, input: PublishInput): Promise<PublishResult> {
  const [result] = await publishDocuments(deps, [input]);
  if (!result) throw new Error(`publishing ${input.key} gave no result`);
  return result;
}

/**
 * Whether a document must be written: forced, never published, different content, or a copy old
 * enough to refresh.
 */
export function isDue(
  input: Pick<PublishInput, 'refreshAfterMs'>,
  identity: string,
  was: { identity: string; publishedAt: number } | undefined,
  now: number,
  force = false,
): boolean {
  return (
    force ||
    !was ||
    was.identity !== identity ||
    (input.refreshAfterMs !== undefined && now - was.publishedAt >= input.refreshAfterMs)
  );
}

/**
 * A JSON document's bytes checked against its catalogue schema: a document that does not match is
 * never put (DocumentInvalidError, a permanent failure of the job).
 */
function assertPublishable(input: PublishInput, body: Buffer): void {
  if (!input.document.schema) return;
  assertValidDocument(input.document, JSON.parse(body.toString('utf8')));
}

/**
 * Publishes several documents with one read and one write of the bookkeeping table (the agent
 * recompute publishes nine an agent, a hundred agents at a time): changed ones are validated
 * against their schema, then put to the bucket, 16 at a time; unchanged ones are skipped. The
 * bucket writes come first and the bookkeeping rows second, outside any transaction: if the row
 * write fails, the next run simply puts the same bytes again. `force` puts every document whatever
 * the bookkeeping says (an object found missing from the bucket while its row remains).
 */
export async function publishDocuments(
  deps: PublishDeps,
  inputs: PublishInput[],
  opts: { force?: boolean } = {},
): Promise<PublishResult[]> {
  if (!inputs.length) return [];
  // Load: what identifies each input, and the published copies.
  // A document with a content hash is compared by it; its bytes are hashed only if it is written.
  const prepared = inputs.map((input): { input: PublishInput; identity: string; body?: Buffer } => {
    if (input.contentHash) return { input, identity: input.contentHash };
    if (typeof input.body === 'function')
      throw new Error(`${input.key}: a document read on demand needs a contentHash`);
    const body = asBuffer(input.body);
    return { input, identity: sha256Of(body), body };
  });
  const previous = await findPublishedIdentities(
    deps.db,
    inputs.map((i) => i.key),
  );
  // Decide: which are due, with their bytes, every one valid before any is put.
  const now = Date.now();
  const changed = await Promise.all(
    prepared
      .filter((p) => isDue(p.input, p.identity, previous.get(p.input.key), now, opts.force))
      .map(async (p) => {
        const { body: source } = p.input;
        const body = p.body ?? asBuffer(typeof source === 'function' ? await source() : source);
        assertPublishable(p.input, body);
        return { ...p, body, sha256: sha256Of(body) };
      }),
  );
  // Save: a batch of agents can change thousands of documents, so a bounded number of puts in flight.
  await mapBounded(changed, PUTS_IN_FLIGHT, (p) =>
    deps.store.put(p.input.key, p.body, {
      contentType: p.input.document.contentType,
      cacheControl: p.input.document.cacheControl,
    }),
  );
  await savePublishedRecords(
    deps.db,
    changed.map((p) => ({
      key: p.input.key,
      contentType: p.input.document.contentType,
      sha256: p.sha256,
      bytes: p.body.length,
      contentHash: p.input.contentHash ?? null,
    })),
  );
  if (changed.length) deps.documentsPublished?.inc({ outcome: 'published' }, changed.length);
  if (inputs.length > changed.length)
    deps.documentsPublished?.inc({ outcome: 'unchanged' }, inputs.length - changed.length);
  const changedKeys = new Set(changed.map((p) => p.input.key));
  return prepared.map((p) => ({
    key: p.input.key,
    outcome: changedKeys.has(p.input.key) ? 'published' : 'unchanged',
    identity: p.identity,
  }));
}

/**
 * What identifies the published copy of each key that has one (its content hash, or its bytes'
 * SHA-256 when it has none) and when it was written.
 */
export const publishedIdentities = findPublishedIdentities;

/** Takes a document out of the bucket (a post unpublished): its public path then answers 404. */
export async function removeDocument(deps: { db: Db; store: ObjectStore }, key: string): Promise<'removed' | 'absent'> {
  const had = await deletePublishedRecord(deps.db, key);
  await deps.store.delete(key);
  return had ? 'removed' : 'absent';
}
