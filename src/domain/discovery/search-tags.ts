import type { Db } from '../../data/db.js';
import { readTagCounts, type TagCount } from '../../data/scoring.repository.js';
import { memoizeFor } from '../../platform/memoize.js';

/**
 * Trigrams of a text as pg_trgm makes them: lower-cased words of letters and digits, each padded
 * with two spaces before and one after, every three-character window, once.
 */
export function trigrams(text: string): Set<string> {
  const out = new Set<string>();
  for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!word) continue;
    const padded = [...`  ${word} `];
    for (let i = 0; i + 3 <= padded.length; i++) out.add(padded.slice(i, i + 3).join(''));
  }
  return out;
}

/** pg_trgm's similarity: shared trigrams over all trigrams of either text (0..1). */
export function trigramSimilarity(a: Set<string>, b: Set<string>): number {
  let shared = 0;
  for (const t of a) if (b.has(t)) shared++;
  return similarityOf(shared, a.size, b.size);
}

/** pg_trgm's similarity from the count of shared trigrams and the two set sizes. */
const similarityOf = (shared: number, a: number, b: number) => (shared ? shared / (a + b - shared) : 0);

/** pg_trgm's default threshold for `%`. */
const TAG_SIMILARITY_THRESHOLD = 0.3;

/** Every tag with its skill count, indexed for trigram and substring matching. */
export interface TagIndex {
  tags: Array<{ tag: string; posts: number; trigramCount: number }>;
  /** For each trigram, the tags containing it (indexes into `tags`). */
  byTrigram: Map<string, number[]>;
  /** Every lower-cased tag, each followed by a newline (no tag holds one), for substring search. */
  joined: string;
  /** Where each tag starts in `joined`. */
  starts: number[];
}

/** A tag a query matched, scored similarity + 0.5 when the tag contains the query. */
export interface TagHit {
  tag: string;
  posts: number;
  score: number;
}

/** Indexes the tags by trigram, and joins them for substring search. */
export function buildTagIndex(rows: TagCount[]): TagIndex {
  const byTrigram = new Map<string, number[]>();
  const tags = rows.map((r, i) => {
    const grams = trigrams(r.tag);
    for (const g of grams) {
      const list = byTrigram.get(g);
      if (list) list.push(i);
      else byTrigram.set(g, [i]);
    }
    return { tag: r.tag, posts: r.posts, trigramCount: grams.size };
  });
  const lower = rows.map((r) => r.tag.toLowerCase());
  const starts: number[] = [];
  let at = 0;
  for (const t of lower) {
    starts.push(at);
    at += t.length + 1;
  }
  return { tags, byTrigram, joined: lower.map((t) => `${t}\n`).join(''), starts };
}

/** The tags containing `needle`, found with one native search over all of them. */
function tagsContaining({ joined, starts }: TagIndex, needle: string): number[] {
  const found: number[] = [];
  if (!needle || needle.includes('\n')) return found;
  for (let at = joined.indexOf(needle); at !== -1; ) {
    // The tag holding this position: the last start at or before it.
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] ?? Number.POSITIVE_INFINITY) <= at) lo = mid;
      else hi = mid - 1;
    }
    found.push(lo);
    // On to the next tag: a tag counts once however often it holds the needle.
    at = joined.indexOf(needle, starts[lo + 1] ?? joined.length);
  }
  return found;
}

/**
 * The tags matching a query, best first, at most `limit`: similar by trigrams (as pg_trgm's `%`)
 * or containing the query (case-insensitive); ties by skill count, then by tag.
 */
export function matchTags(index: TagIndex, q: string, limit: number): TagHit[] {
  const { tags, byTrigram } = index;
  const mine = trigrams(q);
  const containing = new Set(tagsContaining(index, q.toLowerCase()));
  // Shared trigrams per tag, counted through the index: the similarity of a tag sharing none is 0.
  const shared = new Map<number, number>();
  for (const g of mine) for (const i of byTrigram.get(g) ?? []) shared.set(i, (shared.get(i) ?? 0) + 1);
  const hits: TagHit[] = [];
  const consider = (i: number, common: number) => {
    const t = tags[i];
    if (!t) return;
    const similarity = similarityOf(common, mine.size, t.trigramCount);
    const contains = containing.has(i);
    if (similarity >= TAG_SIMILARITY_THRESHOLD || contains)
      hits.push({ tag: t.tag, posts: t.posts, score: similarity + (contains ? 0.5 : 0) });
  };
  for (const [i, common] of shared) consider(i, common);
  // A substring match needs no shared trigram (a short query inside a longer word).
  for (const i of containing) if (!shared.has(i)) consider(i, 0);
  return hits.sort((a, b) => b.score - a.score || b.posts - a.posts || (a.tag < b.tag ? -1 : 1)).slice(0, limit);
}

/**
 * Every tag with its skill count, indexed by trigram, per process for 30 s (tag_stats is rebuilt
 * with the rankings every 15 minutes, and search answers are public for 30 s anyway): matching a
 * query against a few thousand tags in the API process takes a few microseconds per tag sharing
 * a trigram with it, where the same scan with similarity() in PostgreSQL took 2-9 ms of its CPU.
 */
const TAG_INDEX_MS = 30_000;
const tagIndexes = new WeakMap<Db, () => Promise<TagIndex>>();

function tagIndexOf(db: Db): () => Promise<TagIndex> {
  const existing = tagIndexes.get(db);
  if (existing) return existing;
  const index = memoizeFor(TAG_INDEX_MS, async () => buildTagIndex(await readTagCounts(db)));
  tagIndexes.set(db, index);
  return index;
}

/** The tags matching a query (see `matchTags`), from this process's index of every tag. */
export async function searchTags(db: Db, q: string, limit: number): Promise<TagHit[]> {
  return matchTags(await tagIndexOf(db)(), q, limit);
}
