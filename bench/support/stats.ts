/** The p-th percentile (0..100) of `xs` by the nearest-rank method on the sorted values; NaN when empty. */
export const pct = (xs: readonly number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? Number.NaN;

/** Milliseconds as the bench scripts print them. */
export const fmt = (n: number) => n.toFixed(2);
