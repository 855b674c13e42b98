import type { Db } from '../../data/db.js';
import { readRankedMatches, type RankedMatch } from '../../data/search-matches.repository.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { searchTags, type TagHit } from './search-tags.js';
import { analyseWords, matchText, queryWords } from './search-words.js';

export type SearchType = 'all' | 'agents' | 'posts' | 'tags';

export interface SearchHit {
  type: 'agent' | 'post' | 'tag';
  id: string;
  title: string;
  highlight: string | null;
  score: number;
  url: string;
}

export interface SearchAnswer {
  query: string;
  type: SearchType;
  /** The query as corrected, when a word was not known. */
  didYouMean?: string;
  results: SearchHit[];
}

/** A word in more skills than this has a posting list long enough that its plan should see the word. */
const WIDESPREAD_POSTINGS = 20_000;

/**
 * Full-text search (weighted vectors, `websearch_to_tsquery`, `ts_rank_cd`) across agents,
 * published skills and tags. Typos are corrected through the search vocabulary (edit distance,
 * then trigram similarity), very common words are left out of the match, an exact handle ranks first, and
 * highlights mark the matched words. Tags match by trigram similarity or substring.
 */
export async function search(
  db: Db,
  site: SiteInfo,
  q: string,
  type: SearchType,
  limit: number,
): Promise<SearchAnswer> {
  const want = (t: SearchType) => type === 'all' || type === t;
  const words = queryWords(q);
  // Tags match on the raw query; only agents and skills need the vocabulary.
  const { rows: info, totals } =
    words.length && type !== 'tags' ? await analyseWords(db, words) : { rows: [], totals: undefined };
  const forAgents = matchText(info, totals?.agents, 'agents');
  const forPosts = matchText(info, totals?.posts, 'posts');
  const [ranked, tags] = await Promise.all([
    info.length && (want('agents') || want('posts'))
      ? readRankedMatches(db, {
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
  const corrected = [forAgents, forPosts].find((m) => m.corrected !== m.typed)?.corrected ?? null;
  return searchAnswer(site, { q, type, limit, corrected }, ranked, tags);
}

/**
 * The answer from what matched: agents, skills and tags merged by score, best first, `limit` of
 * them, each with the URL of its document; scores rounded to 4 decimals.
 */
export function searchAnswer(
  site: SiteInfo,
  asked: { q: string; type: SearchType; limit: number; corrected: string | null },
  ranked: RankedMatch[],
  tags: TagHit[],
): SearchAnswer {
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
    .slice(0, asked.limit);
  return {
    query: asked.q,
    type: asked.type,
    ...(asked.corrected ? { didYouMean: asked.corrected } : {}),
    results: hits.map((h) => ({ ...h, score: Math.round(h.score * 1e4) / 1e4 })),
  };
}
