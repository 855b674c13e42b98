/**
 * Memoizes an async read for `ms`, so a hot path asks the database at most that often. `now` is
 * the clock the window is measured on (tests pass one they advance by hand).
 */
export function memoizeFor<T>(ms: number, read: () => Promise<T>, now: () => number = Date.now): () => Promise<T> {
  let cached: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!cached || now() - cached.at >= ms) {
      const entry = { at: now(), value: read() };
      cached = entry;
      // A failed read is asked again next time, unless a newer read has already replaced it.
      entry.value.catch(() => {
        if (cached === entry) cached = undefined;
      });
    }
    return cached.value;
  };
}
