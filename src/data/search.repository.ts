import { sql } from 'kysely';
import { PREPARED, type Db, type Executor } from './db.js';

/** The words one type is matched on: as typed, and with each unknown word corrected. */
export interface MatchText {
  typed: string;
  corrected: string;
}

/** One agent or skill a search returns, ranked and highlighted. */
export interface RankedMatch {
  type: 'agent' | 'post';
  /** The agent's handle, or the skill's id. */
  key: string;
  title: string;
  score: number;
  highlight: string | null;
  /** The seller: the skill's author, or the agent itself. */
  sellerHandle: string;
  sellerName: string | null;
  /** The seller's marketplace score (agent_metrics), 0 before its first computation. */
  sellerScore: number;
  /** A skill's price in atomic USDC units; null for an agent. */
  priceAtomic: string | null;
  /** A skill's distinct paying buyer wallets (bazaar_listings, kept by the feed indexer); an agent's sales in 90 days. */
  sales: number;
  /** A skill's preview, or an agent's bio. */
  preview: string | null;
  /** The version label a skill declares (`1.0.0`); null for an agent. */
  versionLabel: string | null;
  /** An agent's published skills; null for a skill. */
  publishedSkills: number | null;
  /** A skill's current version's audit verdict ('pending' before its audit); undefined for an agent. */
  audit?: string;
  /** A skill's rating by verified buyers; undefined for an agent and before any review counted. */
  rating?: { count: number; total: number; adjusted: number | null };
}

export interface RankedMatchesQuery {
  /** Match agents on these words; agents are left out when undefined. */
  agents?: MatchText;
  /** Match published skills on these words; skills are left out when undefined. */
  posts?: MatchText;
  /** The whole query, lower-cased: an agent with exactly this handle ranks first. */
  handle: string;
  limit: number;
  /** Whether the search tier holds skills. */
  tiered: boolean;
  /** Whether the skills' one word is in so many skills that it may be common outside the tier. */
  widespread: boolean;
}

const HEADLINE = 'StartSel=<mark>, StopSel=</mark>, MaxFragments=1, MaxWords=18, MinWords=6';

/**
 * Matches ranked per query and type. A very common word can match a large share of the
 * marketplace; ranking is bounded to this many matches so latency stays flat, and highlights are
 * computed only for the rows returned (see `readRankedMatches` for how the matches are planned).
 */
const RANK_WINDOW = 300;

/**
 * Tier matches ranked per query. The tier is written best first and both of the ways PostgreSQL
 * reads it for a match (a bitmap scan of its GIN index, or a scan of the table) return rows in
 * table order, so these are the tier's best matches, ranked by relevance among themselves.
 */
export const TIER_WINDOW = 100;

/**
 * Tier matches read beyond the page: publishing keeps the tier in step, so a tier skill found
 * unpublished or no longer matching is only a safeguard, but it must not shorten the page.
 */
const TIER_SPARE = 5;

/** The tsquery for a type: the words as typed, or as corrected, whichever matches. */
const tsqueryOf = (m: MatchText) =>
  m.corrected === m.typed
    ? sql`websearch_to_tsquery('english', ${m.typed})`
    : sql`(websearch_to_tsquery('english', ${m.typed}) || websearch_to_tsquery('english', ${m.corrected}))`;

/**
 * Agents and skills matching the query, in one statement: each type ranks up to RANK_WINDOW of
 * its matches (`ts_rank_cd`, plus 1 for an exact handle), the two are merged by score (agents
 * first on a tie; then agents by handle, skills in the tier before the others, then by id), and
 * only the `limit` returned are highlighted. Each row carries what tells it apart (its seller, the
 * seller's score, price, sales, preview, version label) and a skill's audit verdict and rating,
 * looked up by key for the rows ranked only, in the same statement.
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
export async function readRankedMatches(db: Executor, query: RankedMatchesQuery): Promise<RankedMatch[]> {
  const { agents, posts, handle, limit, tiered, widespread } = query;
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
             coalesce(a.display_name, a.handle) || '. ' || coalesce(a.bio, '') AS text, t.score, aq.q AS query, a.search @@ aq.q AS matched,
             a.handle AS seller_handle, a.display_name AS seller_name, coalesce(m.score, 0)::float8 AS seller_score,
             NULL::text AS price_atomic, coalesce(m.settlements_90d, 0) AS sales, a.bio AS preview,
             NULL::text AS version_label, coalesce(m.published_skills, 0) AS published_skills,
             NULL::text AS audit, NULL::int AS rating_count, NULL::int AS rating_total, NULL::numeric AS rating_adjusted
      FROM agent_top t JOIN agents a ON a.id = t.id LEFT JOIN agent_metrics m ON m.agent_id = a.id, aq`);
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
      SELECT 'post' AS type, 1 AS type_order, row_number() OVER (ORDER BY t.score DESC, t.tiered DESC, t.id) AS type_rank, p.id::text AS key, p.title, p.title || '. ' || p.preview AS text, t.score, pq.q AS query, true AS matched,
             s.handle AS seller_handle, s.display_name AS seller_name, coalesce(m.score, 0)::float8 AS seller_score,
             p.price_atomic::text AS price_atomic, coalesce(b.buyers, 0) AS sales, p.preview,
             v.version_label, NULL::int AS published_skills,
             coalesce(v.audit_verdict, 'pending') AS audit, r.count AS rating_count, r.total AS rating_total, r.adjusted AS rating_adjusted
      FROM post_top t JOIN posts p ON p.id = t.id JOIN agents s ON s.id = p.author_id
        LEFT JOIN agent_metrics m ON m.agent_id = s.id LEFT JOIN bazaar_listings b ON b.post_id = p.id
        LEFT JOIN post_versions v ON v.post_id = p.id AND v.version = p.current_version
        LEFT JOIN skill_ratings r ON r.post_id = p.id, pq
      WHERE p.status = 'published' AND p.search @@ pq.q`);
  }
  if (!arms.length) return [];
  // Raw SQL: full-text search (tsquery, @@, ts_rank_cd) in CTEs prepared once per connection.
  const { rows } = await sql<RankedRow>`${prepare ? PREPARED : sql``}
    WITH ${sql.join(ctes)},
    merged AS (${sql.join(arms, sql` UNION ALL `)}),
    page AS (SELECT * FROM merged ORDER BY score DESC, type_order, type_rank LIMIT ${limit})
    SELECT type, key, title, score, CASE WHEN matched THEN ts_headline('english', text, query, ${HEADLINE}) END AS highlight,
           seller_handle AS "sellerHandle", seller_name AS "sellerName", seller_score AS "sellerScore",
           price_atomic AS "priceAtomic", sales, preview, version_label AS "versionLabel", published_skills AS "publishedSkills",
           audit, rating_count AS "ratingCount", rating_total AS "ratingTotal", rating_adjusted AS "ratingAdjusted"
    FROM page ORDER BY score DESC, type_order, type_rank`.execute(db);
  return rows.map(({ audit, ratingCount, ratingTotal, ratingAdjusted, ...match }) => ({
    ...match,
    ...(audit === null ? {} : { audit }),
    ...(ratingCount
      ? { rating: { count: ratingCount, total: ratingTotal ?? 0, adjusted: Number(ratingAdjusted) } }
      : {}),
  }));
}

/** A ranked match as the statement returns it: a skill's verdict and rating in columns of their own. */
type RankedRow = Omit<RankedMatch, 'audit' | 'rating'> & {
  audit: string | null;
  ratingCount: number | null;
  ratingTotal: number | null;
  ratingAdjusted: string | null;
};

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
 * then trigram similarity, then the most used. The candidates are only those an index finds, so a
 * lookup reads a small part of the vocabulary whatever its size: words similar by trigrams (`%`),
 * and words of the same first two letters and a length within two (migration 0046) within two
 * edits. A word of two letters is not corrected: its three trigrams are shared by a large part of
 * any vocabulary (15-50 ms a word of 400,000, against 0.4-2 ms for longer words). Only the
 * vocabulary is searched, never the titles themselves. Stop words (no English lexeme) and words
 * over 64 characters are never corrected.
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
           CASE WHEN v.posts IS NULL AND w !~ '[0-9]' AND length(w) BETWEEN 3 AND 64 AND to_tsvector('english', w) <> ''::tsvector THEN
             (SELECT c.word FROM (
                SELECT s.word, s.posts, s.agents FROM search_vocabulary s WHERE s.word % w
                UNION
                SELECT s.word, s.posts, s.agents FROM search_vocabulary s
                WHERE length(w) >= 4 AND left(s.word, 2) = left(w, 2)
                  AND length(s.word) BETWEEN length(w) - 2 AND length(w) + 2
                  AND levenshtein_less_equal(s.word, w, 2) <= 2) c
              WHERE c.word <> '' AND length(c.word) <= 64
              ORDER BY levenshtein_less_equal(c.word, w, 3), similarity(c.word, w) DESC, c.posts + c.agents DESC LIMIT 1) END AS suggestion
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
