/**
 * Reads shared by every caller asking for one key: while a read is under way, later callers wait
 * for it instead of starting their own, and its answer is reused for `ttlMs` after it arrived. A
 * failed read is forgotten at once, so the next caller tries again. The bucket behind the edge and
 * the API's document routes are read this way: a burst of identical reads costs one fetch.
 */
export function sharedReads<T>(
  read: (key: string) => Promise<T>,
  opts: { ttlMs: number; maxEntries?: number; now?: () => number },
) {
  const now = opts.now ?? Date.now;
  const maxEntries = opts.maxEntries ?? 10_000;
  const entries = new Map<string, { value: Promise<T>; arrivedAt?: number }>();
  return (key: string): Promise<T> => {
    const hit = entries.get(key);
    if (hit && (hit.arrivedAt === undefined || now() - hit.arrivedAt < opts.ttlMs)) return hit.value;
    if (!hit && entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
    const entry: { value: Promise<T>; arrivedAt?: number } = { value: read(key) };
    entries.set(key, entry);
    entry.value.then(
      () => (entry.arrivedAt = now()),
      () => entries.get(key) === entry && entries.delete(key),
    );
    return entry.value;
  };
}
