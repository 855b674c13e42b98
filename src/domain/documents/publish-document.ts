import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../data/db.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { cacheControlOf, type DocumentKind } from '../../documents/catalog.js';

export interface PublishInput {
  key: string;
  /**
   * The bytes, or, for a document with a `contentHash` whose inputs are costly to read, how to
   * read them: called only if the document has to be written.
   */
  body: string | Buffer | (() => Promise<string | Buffer>);
  kind: DocumentKind;
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
}

/**
 * Puts a rendered, already validated document in the bucket unless the bucket already holds the
 * same content (see `publishDocuments`, of which this is the one-document case).
 */
export async function publishDocument(
  deps: { db: Db; store: ObjectStore },
  input: PublishInput,
): Promise<PublishResult> {
  return (await publishDocuments(deps, [input]))[0]!;
}

/** Hash of a document's content without its time stamps (any `computedAt` or `generatedAt` member, at any depth). */
export function stableHash(doc: unknown): string {
  // A replacer rather than a stripped copy: the same JSON (so the same hashes as before), without
  // copying every document of a recompute.
  const json = JSON.stringify(doc, (k, v: unknown) => (k === 'computedAt' || k === 'generatedAt' ? undefined : v));
  return createHash('sha256').update(json).digest('hex');
}

/**
 * `stableHash` of a document whose only time stamp, if it has one, is its own top-level
 * `computedAt`: the same hash without a replacer, which slows JSON.stringify by half (a full
 * recompute hashes 700,000 such documents).
 */
export function topStampedHash(doc: Record<string, unknown>): string {
  const { computedAt: _, ...content } = doc;
  return createHash('sha256').update(JSON.stringify(content)).digest('hex');
}

/** Canonical JSON bytes of a document: stable key order as rendered, two-space indent, trailing newline. */
export const jsonBytes = (doc: unknown) => `${JSON.stringify(doc, null, 2)}\n`;

/** Bucket writes one publishDocuments call keeps in flight. */
const PUTS_IN_FLIGHT = 16;

/**
 * Publishes several documents with one read and one write of the bookkeeping table (the agent
 * recompute publishes nine an agent, a hundred agents at a time): changed ones are put to the
 * bucket, 16 at a time, unchanged ones are skipped. The bucket writes come first and the
 * bookkeeping rows second, outside any transaction: if the row write fails, the next run simply
 * puts the same bytes again. `force` puts every document whatever the bookkeeping says (an object
 * found missing from the bucket while its row remains).
 */
export async function publishDocuments(
  deps: { db: Db; store: ObjectStore },
  inputs: PublishInput[],
  opts: { force?: boolean } = {},
): Promise<PublishResult[]> {
  if (!inputs.length) return [];
  // A document with a content hash is compared by it; its bytes are hashed only if it is written.
  const asBuffer = (body: string | Buffer) => (typeof body === 'string' ? Buffer.from(body) : body);
  const bytesOf = async ({ body }: PublishInput) => asBuffer(typeof body === 'function' ? await body() : body);
  const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');
  const prepared = inputs.map((input): { input: PublishInput; identity: string; body?: Buffer } => {
    if (input.contentHash) return { input, identity: input.contentHash };
    if (typeof input.body === 'function')
      throw new Error(`${input.key}: a document read on demand needs a contentHash`);
    const body = asBuffer(input.body);
    return { input, identity: sha256Of(body), body };
  });
  const previous = await publishedIdentities(
    deps.db,
    inputs.map((i) => i.key),
  );
  const now = Date.now();
  const changed = await Promise.all(
    prepared
      .filter((p) => {
        const was = previous.get(p.input.key);
        return (
          opts.force ||
          !was ||
          was.identity !== p.identity ||
          (p.input.refreshAfterMs !== undefined && now - was.publishedAt >= p.input.refreshAfterMs)
        );
      })
      .map(async (p) => {
        const body = p.body ?? (await bytesOf(p.input));
        return { ...p, body, sha256: sha256Of(body) };
      }),
  );
  // A batch of agents can change thousands of documents: a bounded number of puts in flight.
  let next = 0;
  const putter = async () => {
    while (next < changed.length) {
      const p = changed[next++]!;
      await deps.store.put(p.input.key, p.body, {
        contentType: p.input.kind.contentType,
        cacheControl: cacheControlOf(p.input.kind),
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(PUTS_IN_FLIGHT, changed.length) }, putter));
  if (changed.length) {
    await deps.db
      .insertInto('published_documents')
      .values(
        changed.map((p) => ({
          key: p.input.key,
          content_type: p.input.kind.contentType,
          sha256: p.sha256,
          bytes: p.body.length,
          content_hash: p.input.contentHash ?? null,
        })),
      )
      .onConflict((oc) =>
        oc.column('key').doUpdateSet((eb) => ({
          sha256: eb.ref('excluded.sha256'),
          bytes: eb.ref('excluded.bytes'),
          content_type: eb.ref('excluded.content_type'),
          content_hash: eb.ref('excluded.content_hash'),
          publish_count: eb('published_documents.publish_count', '+', 1),
          published_at: new Date(),
        })),
      )
      .execute();
  }
  const changedKeys = new Set(changed.map((p) => p.input.key));
  return prepared.map((p) => ({ key: p.input.key, outcome: changedKeys.has(p.input.key) ? 'published' : 'unchanged' }));
}

/**
 * What identifies the published copy of each key that has one (its content hash, or its bytes'
 * SHA-256 when it has none) and when it was written.
 */
export async function publishedIdentities(
  db: Db,
  keys: string[],
): Promise<Map<string, { identity: string; publishedAt: number }>> {
  if (!keys.length) return new Map();
  const rows = await db
    .selectFrom('published_documents')
    .select(['key', 'sha256', 'content_hash', 'published_at'])
    .where(sql<boolean>`key = ANY(${keys}::text[])`)
    .execute();
  return new Map(
    rows.map((r) => [r.key, { identity: r.content_hash ?? r.sha256, publishedAt: new Date(r.published_at).getTime() }]),
  );
}

/** Takes a document out of the bucket (a post unpublished): its public path then answers 404. */
export async function removeDocument(deps: { db: Db; store: ObjectStore }, key: string): Promise<'removed' | 'absent'> {
  const row = await deps.db
    .deleteFrom('published_documents')
    .where('key', '=', key)
    .returning('key')
    .executeTakeFirst();
  await deps.store.delete(key);
  return row ? 'removed' : 'absent';
}
