import { sql } from 'kysely';
import { PREPARED, type Db, type Executor } from './db.js';

/** What the search vocabulary says about one query word. */
export interface WordInfo {
  word: string;
  /** Published skills containing the word (its English stem or the word itself); null when unknown. */
  posts: number | null;
  /** Agents containing it; null when unknown. */
  agents: number | null;
  /** For a word the vocabulary does not know, the closest word it knows. */
  suggestion: string | null;
}

/** The vocabulary's totals row, and whether the search tier holds skills. */
export interface VocabularyTotals {
  posts: number;
  agents: number;
  tiered: boolean;
}

/**
 * What the vocabulary says about each word, one row per word in order: how many skills and agents
 * contain it (its English stem or the word itself), and for a word it does not know, the closest
 * known word: fewest edits (Levenshtein, at most 2, which catches swapped letters trigrams miss),
 * then trigram similarity, then the most used. Only the vocabulary is searched, never the titles
 * themselves. Stop words (no English lexeme) and words over 64 characters are never corrected.
 * The totals are undefined while the vocabulary has never been built.
 */
export async function readVocabularyWords(
  db: Executor,
  words: string[],
): Promise<{ rows: WordInfo[]; totals: VocabularyTotals | undefined }> {
  // One round trip: the totals row ('') rides along on every word's row. Raw SQL: unnest of the
  // words with LATERAL joins, and pg_trgm's `%` and fuzzystrmatch, which Kysely has no form for.
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
  const first = rows[0];
  const totals =
    first && first.total_posts !== null && first.total_agents !== null
      ? { posts: first.total_posts, agents: first.total_agents, tiered: first.tiered }
      : undefined;
  return { rows: rows.map(({ word, posts, agents, suggestion }) => ({ word, posts, agents, suggestion })), totals };
}

/**
 * Rebuilds the search vocabulary from the search vectors (published skills and agents) in one
 * transaction of its own (so it takes the pool), so searches see the old or the new one; returns
 * the words written (the totals row not counted). Seconds on a million skills. Rebuilds take turns
 * (an advisory lock): two at once (scheduled population jobs that waited behind a full recompute
 * start together) each deleted only the rows they could see, and the second then inserted words
 * the first had committed.
 */
export async function refreshSearchVocabulary(db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    // A bare function call, which reads plainer as SQL.
    await sql`SELECT pg_advisory_xact_lock(hashtext('search_vocabulary'))`.execute(trx);
    await trx.deleteFrom('search_vocabulary').execute();
    // Raw SQL: the words come out of each search vector through unnest(tsvector_to_array(...)).
    const res = await sql`
      INSERT INTO search_vocabulary (word, posts, agents)
      SELECT word, sum(posts)::int, sum(agents)::int FROM (
        SELECT word, count(*) AS posts, 0 AS agents FROM posts, unnest(tsvector_to_array(search)) word
        WHERE status = 'published' AND word !~ '[0-9]' AND length(word) <= 64 GROUP BY word
        UNION ALL
        SELECT word, 0, count(*) FROM agents, unnest(tsvector_to_array(search)) word
        WHERE word !~ '[0-9]' AND length(word) <= 64 GROUP BY word) w
      GROUP BY word`.execute(trx);
    await trx
      .insertInto('search_vocabulary')
      .values((eb) => ({
        word: '',
        posts: eb
          .selectFrom('posts')
          .select(eb.fn.countAll<number>().as('n'))
          .where('status', '=', sql.lit('published')),
        agents: eb.selectFrom('agents').select(eb.fn.countAll<number>().as('n')),
      }))
      .execute();
    return Number(res.numAffectedRows ?? 0);
  });
}
