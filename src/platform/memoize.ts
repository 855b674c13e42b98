/** Memoizes an async read for `ms`, so a hot path asks the database at most that often. */
export function memoizeFor<T>(ms: number, read: () => Promise<T>): () => Promise<T> {
  let cached: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at >= ms) {
      const entry = { at: Date.now(), value: read() };
      cached = entry;
      // A failed read is asked again next time, unless a newer read has already replaced it.
      entry.value.catch(() => cached === entry && (cached = undefined));
    }
    return cached.value;
  };
}
