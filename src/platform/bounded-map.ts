/**
 * Runs `fn` over `items` with at most `limit` calls in flight, and returns the results in the
 * order of `items`. The first failure rejects the whole map; calls already started run to their end.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      // `i` is below items.length, checked just above: the element exists.
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(0, Math.min(limit, items.length)) }, lane));
  return results;
}
