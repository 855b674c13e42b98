/**
 * Text PostgreSQL cannot hold. `text` and `jsonb` refuse the NUL character, and UTF-8 has no
 * encoding for an unpaired UTF-16 surrogate, so either reaching a statement fails it with a
 * server error. Input is checked for both before any query, and refused as the client's mistake.
 */

// A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding the NUL character is the point
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored, or undefined when it can. */
export function unstorableReason(text: string): string | undefined {
  const found = UNSTORABLE.exec(text);
  if (!found) return undefined;
  return found[0] === '\u0000'
    ? 'contains a NUL character'
    : 'contains an unpaired UTF-16 surrogate (not valid Unicode)';
}

/**
 * The first place in a parsed value (strings, arrays, plain objects, their keys too) holding text
 * that cannot be stored, as a dotted path and a reason; undefined when everything can be.
 * `maxDepth` bounds the walk on hostile nesting; deeper values are reported as too deep.
 */
export function findUnstorable(value: unknown, path = '', maxDepth = 64): { path: string; reason: string } | undefined {
  if (typeof value === 'string') {
    const reason = unstorableReason(value);
    return reason ? { path, reason } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (maxDepth <= 0) return { path, reason: 'is nested too deeply' };
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [key, child] of entries) {
    const at = path ? `${path}.${key}` : key;
    const keyReason = unstorableReason(key);
    if (keyReason) return { path: at, reason: `its name ${keyReason}` };
    const found = findUnstorable(child, at, maxDepth - 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * A copy of `items` in the order of `key`, compared by UTF-16 code units (never the locale's
 * collation): the same order on every process, as writers that lock rows in one order need.
 */
export function sortedByKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}
