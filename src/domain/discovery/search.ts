import { sql } from 'kysely';
import { PREPARED, type Db } from '../../data/db.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { memoizeFor } from '../../platform/memoize.js';

export type SearchType = 'all' | 'agents' | 'posts' | 'tags';

export interface SearchHit {
  type: 'agent' | 'post' | 'tag';
  id: string;
  title: string;
  highlight: string | null;
  score: number;
  url: string;
}

const HEADLINE = 'StartSel=<mark>, StopSel=</mark>, MaxFragments=1, MaxWords=18, MinWords=6';
/**
 * Matches ranked per query and type. A very common word can match a large share of the
 * marketplace; ranking is bounded to this many matches so latency stays flat, and highlights are
 * computed only for the rows returned (see `search` for how the matches are planned).
 */
const RANK_WINDOW = 300;
/** A word in more than this share of skills (or agents) selects nothing; it is left out of the match. */
const COMMON_SHARE = 0.25;
/** Below this many skills (or agents) no word is common enough to leave out. */
const COMMON_MIN_POPULATION = 1000;
/** A word in more skills than this has a posting list long enough that its plan should see the word. */
const WIDESPREAD_POSTINGS = 20_000;

export interface WordInfo {
  word: string;
  posts: number | null;
  agents: number | null;
  suggestion: string | null;
}

/**
 * What the vocabulary says about each query word: how many skills and agents contain it (its
 * English stem or the word itself), and for a word it does not know, the closest known word:
 * fewest edits (Levenshtein, at most 2, which catches swapped letters trigrams miss), then trigram
 * similarity, then the most used. Only the vocabulary is searched, never the titles themselves.
 * Stop words (no English lexeme) and words over 64 characters are never corrected.
 */
async function lookUpWords(db: Db, words: string[]) {
  // One round trip: the totals row ('') rides along on every word's row.
  const { rows } = await sql<
    WordInfo & { total_posts: number | null; total_agents: number | null; tiered: boolean }
  >`${PREPARED}
    SELECT w AS word, v.posts, v.agents, t.posts AS total_posts, t.agents AS total_agents, EXISTS (SELECT FROM search_tier_posts) AS tiered,
           CASE WHEN v.posts IS NULL AND w !~ '[0-9]' AND length(w) <= 64 AND to_tsvector('english', w) <> ''::tsvector THEN
             (SELECT s.word FROM search_vocabulary s
              WHERE s.word <> '' AND length(s.word) <= 64
                AND (s.word % w OR (length(w) >= 4 AND abs(length(s.word) - length(w)) <= 2
                                    AND levenshtein_less_equal(s.word, w, 2) <= 2))
              ORDER BY levenshtein_less_equal(s.word, w, 3), similarity(s.word, w) DESC, s.posts + s.agents DESC LIMIT 1) END AS suggestion
    FROM unnest(${words}::text[]) w
    CROSS JOIN LATERAL (SELECT ARRAY[w] || tsvector_to_array(to_tsvector('english', w)) AS forms) f
    LEFT JOIN LATERAL (
      SELECT max(s.posts) AS posts, max(s.agents) AS agents FROM search_vocabulary s
      WHERE s.word = ANY(f.forms)
      HAVING count(*) > 0) v ON true
    LEFT JOIN search_vocabulary t ON t.word = ''`.execute(db);
  const totals =
    rows[0] && rows[0].total_posts !== null
      ? { posts: rows[0].total_posts, agents: rows[0].total_agents!, tiered: rows[0].tiered }
      : undefined;
  return { rows: rows.map(({ word, posts, agents, suggestion }) => ({ word, posts, agents, suggestion })), totals };
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
  totals?: { at: number; posts: number; agents: number; tiered: boolean };
}
const wordMemories = new WeakMap<Db, WordMemory>();

async function analyse(db: Db, words: string[]) {
  let memory = wordMemories.get(db);
  if (!memory) wordMemories.set(db, (memory = { words: new Map() }));
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
  for (const w of words)
    if (!known.has(w) && /[0-9]/.test(w)) known.set(w, { word: w, posts: null, agents: null, suggestion: null });
  let totals =
    memory.totals && fresh(memory.totals.at)
      ? { posts: memory.totals.posts, agents: memory.totals.agents, tiered: memory.totals.tiered }
      : undefined;
  const missing = words.filter((w) => !known.has(w));
  if (missing.length || !totals) {
    const looked = await lookUpWords(db, missing.length ? missing : words.slice(0, 1));
    for (const info of looked.rows) {
      memory.words.delete(info.word); // re-inserted last: the oldest half is what gets pruned
      memory.words.set(info.word, { at: now, info });
      known.set(info.word, info);
    }
    memory.totals = looked.totals ? { at: now, ...looked.totals } : undefined;
    totals = looked.totals;
  }
  return { rows: words.map((w) => known.get(w)!), totals };
}

/**
 * The text to match for one type: the query's words, each as typed or corrected, without words so
 * common in that type that they would match a large share of it (unless nothing else is left).
 */
export function matchText(rows: WordInfo[], total: number | undefined, field: 'posts' | 'agents') {
  const rare = rows.filter((r) => !total || total < COMMON_MIN_POPULATION || (r[field] ?? 0) <= total * COMMON_SHARE);
  const kept = rare.length ? rare : rows;
  return {
    typed: kept.map((r) => r.word).join(' '),
    corrected: kept.map((r) => r.suggestion ?? r.word).join(' '),
  };
}

/** The tsquery for a type: the words as typed, or as corrected, whichever matches. */
const tsqueryOf = (m: { typed: string; corrected: string }) =>
  m.corrected === m.typed
    ? sql`websearch_to_tsquery('english', ${m.typed})`
    : sql`(websearch_to_tsquery('english', ${m.typed}) || websearch_to_tsquery('english', ${m.corrected}))`;

/**
 * Full-text search (weighted vectors, `websearch_to_tsquery`, `ts_rank_cd`) across agents,
 * published skills and tags. Typos are corrected through the search vocabulary (edit distance,
 * then trigram similarity), very common words are left out of the match, an exact handle ranks first, and
 * highlights mark the matched words. Tags match by trigram similarity or substring.
 */
export async function search(db: Db, site: SiteInfo, q: string, type: SearchType, limit: number) {
  const want = (t: SearchType) => type === 'all' || type === t;
  const words = [
    ...new Set(
      q
        .toLowerCase()
        .split(/[^\p{L}\p{M}\p{N}]+/u)
        .filter((w) => w.length >= 2),
    ),
  ].slice(0, 12);
  // Tags match on the raw query; only agents and skills need the vocabulary.
  const { rows: info, totals } =
    words.length && type !== 'tags' ? await analyse(db, words) : { rows: [], totals: undefined };
  const forAgents = matchText(info, totals?.agents, 'agents');
  const forPosts = matchText(info, totals?.posts, 'posts');
  const [ranked, tags] = await Promise.all([
    info.length && (want('agents') || want('posts'))
      ? rankedMatches(db, {
          agents: want('agents') ? forAgents : undefined,
          posts: want('posts') ? forPosts : undefined,
          handle: q.trim().toLowerCase(),
          limit,
          tiered: totals?.tiered ?? false,
          widespread: (info.find((r) => r.word === forPosts.typed)?.posts ?? 0) > WIDESPREAD_POSTINGS,
        })
      : [],
    want('tags') ? searchTags(db, q, limit) : [],
  ]);
  const hits: SearchHit[] = [
    ...ranked.map((r) =>
      r.type === 'agent'
        ? {
            type: 'agent' as const,
            id: r.key,
            title: r.title,
            highlight: r.highlight,
            score: Number(r.score),
            url: `${site.baseUrl}/api/agents/${r.key}/agent-card.json`,
          }
        : {
            type: 'post' as const,
            id: r.key,
            title: r.title,
            highlight: r.highlight,
            score: Number(r.score),
            url: `${site.baseUrl}/api/posts/${r.key}`,
          },
    ),
    ...tags.map((r) => ({
      type: 'tag' as const,
      id: r.tag,
      title: `${r.tag} (${r.posts} skills)`,
      highlight: null,
      score: Number(r.score),
      url: `${site.baseUrl}/api/discovery/search?q=${encodeURIComponent(r.tag)}&type=posts`,
    })),
  ]
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
  const corrected = [forAgents, forPosts].find((m) => m.corrected !== m.typed)?.corrected ?? null;
  return {
    query: q,
    type,
    ...(corrected ? { didYouMean: corrected } : {}),
    results: hits.map((h) => ({ ...h, score: Math.round(h.score * 1e4) / 1e4 })),
  };
}

type MatchText = ReturnType<typeof matchText>;

/**
 * Agents and skills matching the query, in one statement: each type ranks up to RANK_WINDOW of
 * its matches (`ts_rank_cd`, plus 1 for an exact handle), the two are merged by score (agents
 * first on a tie; then agents by handle, skills in the tier before the others, then by id), and
 * only the `limit` returned are highlighted.
 *
 * How the matches are planned. Agents: always through the GIN index (the condition comes from a
 * CTE the planner cannot see into), since a word absent from agents would otherwise send it
 * scanning every agent. Skills: the search tier first (see search-tier.ts); the full index only
 * when the tier holds fewer matches than the page needs, which the planner gates on the tier's
 * count, so it costs nothing otherwise. The tier's best 100 matches are ranked (TIER_WINDOW).
 * Without a tier, a one-word match is written out, so the planner reads the table until the
 * window is full for a common word and uses the index for a rare one; several words always use
 * the index (intersecting posting lists), never a scan hoping to fill the window with a
 * combination that may not exist. With a tier, the full index is only read for words rare in the
 * tier, so the index is always the plan and the statement is prepared. A tier match is checked
 * against the skill itself (published, still matching) before it is returned.
 */
async function rankedMatches(
  db: Db,
  opts: { agents?: MatchText; posts?: MatchText; handle: string; limit: number; tiered: boolean; widespread: boolean },
) {
  const { agents, posts, handle, limit, tiered, widespread } = opts;
  const ctes = [];
  const arms = [];
  // Planning this statement costs about as much as running it, so it is prepared, except when a
  // one-word skills match is written out for the planner to see (that plan depends on the word).
  let prepare = true;
  if (agents) {
    ctes.push(sql`
      aq AS (SELECT ${tsqueryOf(agents)} AS q),
      agent_matches AS (
        (SELECT a.id, a.handle, a.search FROM agents a, aq WHERE a.search @@ aq.q LIMIT ${RANK_WINDOW})
        UNION ALL (SELECT a.id, a.handle, a.search FROM agents a WHERE a.handle = ${handle})),
      agent_top AS (
        SELECT id, score FROM (
          SELECT DISTINCT ON (m.id) m.id, m.handle, ts_rank_cd(m.search, aq.q) + CASE WHEN m.handle = ${handle} THEN 1 ELSE 0 END AS score
          FROM agent_matches m, aq ORDER BY m.id) d
        ORDER BY score DESC, handle LIMIT ${limit})`);
    arms.push(sql`
      SELECT 'agent' AS type, 0 AS type_order, row_number() OVER (ORDER BY t.score DESC, a.handle) AS type_rank, a.handle AS key, coalesce(a.display_name, a.handle) AS title,
             coalesce(a.display_name, a.handle) || '. ' || coalesce(a.bio, '') AS text, t.score, aq.q AS query, a.search @@ aq.q AS matched
      FROM agent_top t JOIN agents a ON a.id = t.id, aq`);
  }
  if (posts) {
    // With a tier, the full index is read only for a word too rare to fill a page from the tier's
    // best 100,000 skills, so usually rare in all of them too: the GIN index is the plan, known in
    // advance. Unless the word is in many skills outside the tier (older or unsold ones): then
    // reading the table until the window is full beats building its whole posting list.
    const planned = (!tiered || widespread) && posts.typed.split(' ').length === 1;
    prepare = !planned;
    ctes.push(sql`
      pq AS (SELECT ${tsqueryOf(posts)} AS q),
      tier_matches AS (SELECT t.post_id AS id, t.search, true AS tiered FROM search_tier_posts t, pq WHERE t.search @@ pq.q LIMIT ${TIER_WINDOW}),
      full_matches AS (
        SELECT p.id, p.search, false AS tiered FROM posts p, pq
        WHERE (SELECT count(*) FROM tier_matches) < ${limit}
          AND p.search @@ ${planned ? tsqueryOf(posts) : sql`pq.q`} AND p.status = 'published' LIMIT ${RANK_WINDOW}),
      post_top AS (
        SELECT m.id, max(ts_rank_cd(m.search, pq.q)) AS score, bool_or(m.tiered) AS tiered
        FROM (SELECT * FROM tier_matches UNION ALL SELECT * FROM full_matches) m, pq
        GROUP BY m.id ORDER BY score DESC, tiered DESC, m.id LIMIT ${limit + TIER_SPARE})`);
    arms.push(sql`
      SELECT 'post' AS type, 1 AS type_order, row_number() OVER (ORDER BY t.score DESC, t.tiered DESC, t.id) AS type_rank, p.id::text AS key, p.title, p.title || '. ' || p.preview AS text, t.score, pq.q AS query, true AS matched
      FROM post_top t JOIN posts p ON p.id = t.id, pq
      WHERE p.status = 'published' AND p.search @@ pq.q`);
  }
  const { rows } = await sql<{
    type: 'agent' | 'post';
    key: string;
    title: string;
    score: number;
    highlight: string | null;
  }>`${prepare ? PREPARED : sql``}
    WITH ${sql.join(ctes)},
    merged AS (${sql.join(arms, sql` UNION ALL `)}),
    page AS (SELECT * FROM merged ORDER BY score DESC, type_order, type_rank LIMIT ${limit})
    SELECT type, key, title, score, CASE WHEN matched THEN ts_headline('english', text, query, ${HEADLINE}) END AS highlight
    FROM page ORDER BY score DESC, type_order, type_rank`.execute(db);
  return rows;
}

/**
 * Tier matches ranked per query. The tier is written best first and both of the ways PostgreSQL
 * reads it for a match (a bitmap scan of its GIN index, or a scan of the table) return rows in
 * table order, so these are the tier's best matches, ranked by relevance among themselves.
 */
const TIER_WINDOW = 100;

/**
 * Tier matches read beyond the page: publishing keeps the tier in step, so a tier skill found
 * unpublished or no longer matching is only a safeguard, but it must not shorten the page.
 */
const TIER_SPARE = 5;

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

interface TagIndex {
  tags: Array<{ tag: string; posts: number; trigramCount: number }>;
  /** For each trigram, the tags containing it (indexes into `tags`). */
  byTrigram: Map<string, number[]>;
  /** Every lower-cased tag, each followed by a newline (no tag holds one), for substring search. */
  joined: string;
  /** Where each tag starts in `joined`. */
  starts: number[];
}

/**
 * Every tag with its skill count, indexed by trigram, per process for 30 s (tag_stats is rebuilt
 * with the rankings every 15 minutes, and search answers are public for 30 s anyway): matching a
 * query against a few thousand tags in the API process takes a few microseconds per tag sharing
 * a trigram with it, where the same scan with similarity() in PostgreSQL took 2-9 ms of its CPU.
 */
const tagIndexes = new WeakMap<Db, () => Promise<TagIndex>>();

async function loadTagIndex(db: Db): Promise<TagIndex> {
  const rows = await db.selectFrom('tag_stats').select(['tag', 'posts']).execute();
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
      if (starts[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    found.push(lo);
    // On to the next tag: a tag counts once however often it holds the needle.
    at = joined.indexOf(needle, starts[lo + 1] ?? joined.length);
  }
  return found;
}

async function searchTags(db: Db, q: string, limit: number) {
  let index = tagIndexes.get(db);
  if (!index) tagIndexes.set(db, (index = memoizeFor(30_000, () => loadTagIndex(db))));
  const tagIndex = await index();
  const { tags, byTrigram } = tagIndex;
  const needle = q.toLowerCase();
  const mine = trigrams(q);
  const containing = new Set(tagsContaining(tagIndex, needle));
  // Shared trigrams per tag, counted through the index: the similarity of a tag sharing none is 0.
  const shared = new Map<number, number>();
  for (const g of mine) for (const i of byTrigram.get(g) ?? []) shared.set(i, (shared.get(i) ?? 0) + 1);
  const hits: Array<{ tag: string; posts: number; score: number }> = [];
  const consider = (i: number, common: number) => {
    const t = tags[i]!;
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
 * Rebuilds the search vocabulary from the search vectors (published skills and agents), in one
 * transaction, so searches see the old or the new one. Seconds on a million skills. Rebuilds take
 * turns (an advisory lock): two at once (scheduled population jobs that waited behind a full
 * recompute start together) each deleted only the rows they could see, and the second then
 * inserted words the first had committed.
 */
export async function refreshSearchVocabulary(db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext('search_vocabulary'))`.execute(trx);
    await sql`DELETE FROM search_vocabulary`.execute(trx);
    const res = await sql`
      INSERT INTO search_vocabulary (word, posts, agents)
      SELECT word, sum(posts)::int, sum(agents)::int FROM (
        SELECT word, count(*) AS posts, 0 AS agents FROM posts, unnest(tsvector_to_array(search)) word
        WHERE status = 'published' AND word !~ '[0-9]' AND length(word) <= 64 GROUP BY word
        UNION ALL
        SELECT word, 0, count(*) FROM agents, unnest(tsvector_to_array(search)) word
        WHERE word !~ '[0-9]' AND length(word) <= 64 GROUP BY word) w
      GROUP BY word`.execute(trx);
    await sql`
      INSERT INTO search_vocabulary (word, posts, agents)
      VALUES ('', (SELECT count(*) FROM posts WHERE status = 'published'), (SELECT count(*) FROM agents))`.execute(trx);
    return Number(res.numAffectedRows ?? 0);
  });
}
