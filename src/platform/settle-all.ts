/**
 * `Promise.all`, except that a failure is thrown only once every promise has settled: the work
 * begun beside the one that failed (statements on other connections) is over before the caller
 * (a job's retry) can begin it again.
 */
export async function allSettledOrThrow<T extends readonly unknown[] | []>(
  values: T,
): Promise<{ -readonly [P in keyof T]: Awaited<T[P]> }> {
  const settled = (await Promise.allSettled(values)) as PromiseSettledResult<unknown>[];
  for (const r of settled) if (r.status === 'rejected') throw r.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as {
    -readonly [P in keyof T]: Awaited<T[P]>;
  };
}
