/** A wait that ran past its bound. */
export class TimeoutError extends Error {
  constructor(
    what: string,
    readonly ms: number,
  ) {
    super(`${what} did not finish within ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/**
 * Resolves or rejects as `work` does, or rejects with TimeoutError after `ms`, whichever comes
 * first. The work itself is not cancelled: use it where giving up waiting is what matters.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what = 'the operation'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(what, ms)), ms);
  });
  return Promise.race([work, timedOut]).finally(() => clearTimeout(timer));
}
