/**
 * Runs `fn` over `items` with at most `limit` calls in flight, and returns the results in the
 * order of `items`. After the first failure no call is started; the map waits for those already
 * started to end, then rejects with that first failure: once it has rejected, nothing it started
 * still runs (a write of an older render cannot land after its caller gave up).
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (next < items.length && !failure) {
      const i = next++;
      try {
        // `i` is below items.length, checked just above: the element exists.
        results[i] = await fn(items[i] as T, i);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(0, Math.min(limit, items.length)) }, lane));
  if (failure) throw failure.err;
  return results;
}
