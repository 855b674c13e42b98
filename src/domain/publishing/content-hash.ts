import { createHash } from 'node:crypto';

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
