/**
 * The k-th largest value of `xs` (1-based, 1 ≤ k ≤ xs.length), found by quickselect: `xs` is
 * reordered in place, and no array is allocated (the ranking calls it once per agent).
 */
export function kthLargest(xs: Float64Array, k: number): number {
  if (!(k >= 1 && k <= xs.length)) throw new RangeError(`k must be within 1..${xs.length}, got ${k}`);
  let lo = 0;
  let hi = xs.length - 1;
  const target = k - 1;
  while (lo < hi) {
    // Every index read below lies within [lo, hi], inside the array: `?? 0` never applies.
    const pivot = xs[(lo + hi) >>> 1] ?? 0;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while ((xs[i] ?? 0) > pivot) i++;
      while ((xs[j] ?? 0) < pivot) j--;
      if (i <= j) {
        const t = xs[i] ?? 0;
        xs[i] = xs[j] ?? 0;
        xs[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else break;
  }
  return xs[target] ?? 0;
}
