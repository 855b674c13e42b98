import type { Db } from '../../data/db.js';
import {
  readVocabularyWords,
  type MatchText,
  type VocabularyTotals,
  type WordInfo,
} from '../../data/search.repository.js';

export type { WordInfo } from '../../data/search.repository.js';

/** A word in more than this share of skills (or agents) selects nothing; it is left out of the match. */
const COMMON_SHARE = 0.25;
/** Below this many skills (or agents) no word is common enough to leave out. */
const COMMON_MIN_POPULATION = 1000;
/** Words of a query looked up; the rest are ignored. */
const MAX_QUERY_WORDS = 12;

/** The distinct words of a query (letters, marks and digits, at least two characters), lower-cased, first 12. */
export function queryWords(q: string): string[] {
  const words = q
    .toLowerCase()
    .split(/[^\p{L}\p{M}\p{N}]+/u)
    .filter((w) => w.length >= 2);
  return [...new Set(words)].slice(0, MAX_QUERY_WORDS);
}

/**
 * The text to match for one type: the query's words, each as typed or corrected, without words so
 * common in that type that they would match a large share of it (unless nothing else is left).
 */
export function matchText(rows: WordInfo[], total: number | undefined, field: 'posts' | 'agents'): MatchText {
  const rare = rows.filter((r) => !total || total < COMMON_MIN_POPULATION || (r[field] ?? 0) <= total * COMMON_SHARE);
  const kept = rare.length ? rare : rows;
  return {
    typed: kept.map((r) => r.word).join(' '),
    corrected: kept.map((r) => r.suggestion ?? r.word).join(' '),
  };
}

/**
 * The vocabulary is rebuilt with the rankings (every 15 minutes), so what it says about a word is
 * remembered for a minute per process: popular words are looked up once a minute, not once a
 * search. Bounded; the oldest half is dropped when full. Per database, as tests run several.
 */
const WORD_MEMORY_MS = 60_000;
const WORD_MEMORY_MAX = 20_000;
interface WordMemory {
  words: Map<string, { at: number; info: WordInfo }>;
  /** The vocabulary's totals, and whether the search tier holds skills (the plan depends on it). */
  totals?: { at: number } & VocabularyTotals;
}
const wordMemories = new WeakMap<Db, WordMemory>();

function memoryOf(db: Db): WordMemory {
  const existing = wordMemories.get(db);
  if (existing) return existing;
  const memory: WordMemory = { words: new Map() };
  wordMemories.set(db, memory);
  return memory;
}

/** A word the vocabulary cannot know: nothing contains it and nothing is suggested. */
const unknownWord = (word: string): WordInfo => ({ word, posts: null, agents: null, suggestion: null });

/**
 * What the vocabulary says about each word (in order), and its totals: from this process's memory
 * when it is fresh, otherwise in one lookup of the words it lacks.
 */
export async function analyseWords(
  db: Db,
  words: string[],
): Promise<{ rows: WordInfo[]; totals: VocabularyTotals | undefined }> {
  const memory = memoryOf(db);
  if (memory.words.size > WORD_MEMORY_MAX)
    for (const k of [...memory.words.keys()].slice(0, WORD_MEMORY_MAX / 2)) memory.words.delete(k);
  const now = Date.now();
  const fresh = (at: number) => now - at < WORD_MEMORY_MS;
  // Taken out before any await: a concurrent search may prune the memory meanwhile.
  const known = new Map<string, WordInfo>();
  for (const w of words) {
    const hit = memory.words.get(w);
    if (hit && fresh(hit.at)) known.set(w, hit.info);
  }
  // The vocabulary holds no word with a digit (numbers and handles would flood it), so such a word
  // is known to be unknown, with nothing to suggest, without asking: 45% of distinct queries carry one.
  for (const w of words) if (!known.has(w) && /[0-9]/.test(w)) known.set(w, unknownWord(w));
  let totals =
    memory.totals && fresh(memory.totals.at)
      ? { posts: memory.totals.posts, agents: memory.totals.agents, tiered: memory.totals.tiered }
      : undefined;
  const missing = words.filter((w) => !known.has(w));
  if (missing.length || !totals) {
    const looked = await readVocabularyWords(db, missing.length ? missing : words.slice(0, 1));
    for (const info of looked.rows) {
      memory.words.delete(info.word); // re-inserted last: the oldest half is what gets pruned
      memory.words.set(info.word, { at: now, info });
      known.set(info.word, info);
    }
    memory.totals = looked.totals ? { at: now, ...looked.totals } : undefined;
    totals = looked.totals;
  }
  // The lookup answers every word it is asked; a word it somehow did not is treated as unknown.
  return { rows: words.map((w) => known.get(w) ?? unknownWord(w)), totals };
}
