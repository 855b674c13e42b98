import type { Db } from '../../data/db.js';
import { readRankedMatches, type RankedMatch } from '../../data/search.repository.js';
import type { Rating } from '../../data/reviews.repository.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { formatUsdc } from '../../documents/site-agent-card.renderer.js';
import { searchTags, type TagHit } from './search-tags.js';
import { analyseWords, matchText, queryWords } from './search-words.js';

export type SearchType = 'all' | 'agents' | 'posts' | 'tags';

export interface SearchHit {
  type: 'agent' | 'post' | 'tag';
  id: string;
  title: string;
  /** The title, followed by `(by @seller)` when another result of the answer has the same title. */
  label: string;
  highlight: string | null;
  /** Relevance to the query. */
  score: number;
  /** The API document: an agent's AgentCard, a skill's public view, a tag's skills search. */
  url: string;
  /** The page for people: /agents/{handle}, /skills/{postId}, /search?q={tag}. */
  page: string;
  /** Who sells it (an agent is its own seller), with the seller's marketplace score; agents and skills. */
  seller?: { handle: string; displayName: string | null; score: number };
  /** A skill's price in atomic USDC units (6 decimals) and in USDC. */
  priceAtomic?: string;
  priceUsdc?: string;
  /** A skill's distinct paying buyers (wallets), all time. */
  buyers?: number;
  /** An agent's sales of its skills in the last 90 days. */
  sales90d?: number;
  /** The first line of a skill's preview or an agent's bio, at most 160 characters. */
  preview?: string;
  /** The version label the skill declares (`1.0.0`). */
  version?: string;
  /** An agent's published skills. */
  publishedSkills?: number;
  /** A skill's rating by verified buyers (docs/reputation.md): null means no review counts yet. */
  rating?: { count: number; mean: number | null; adjusted: number | null };
}

export interface SearchAnswer {
  query: string;
  type: SearchType;
  /** The query as corrected, when a word was not known. */
  didYouMean?: string;
  results: SearchHit[];
}

/** A word in more skills than this has a posting list long enough that its plan should see the word. */
export const WIDESPREAD_POSTINGS = 20_000;

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
  filter: SearchFilter = {},
): Promise<SearchAnswer> {
  const want = (t: SearchType) => type === 'all' || type === t;
  // Skills whose audit did not pass are dropped after ranking, and sort=rating orders the best
  // matches by rating, so more are ranked to fill the page.
  const ranks = filter.audit || filter.sort === 'rating' ? limit * AUDIT_FILTER_WIDENING : limit;
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
          limit: ranks,
          tiered: totals?.tiered ?? false,
          widespread: (info.find((r) => r.word === forPosts.typed)?.posts ?? 0) > WIDESPREAD_POSTINGS,
        })
      : [],
    want('tags') ? searchTags(db, q, limit) : [],
  ]);
  const corrected = [forAgents, forPosts].find((m) => m.corrected !== m.typed)?.corrected ?? null;
  const audited = ranked.filter((r) => !filter.audit || r.type !== 'post' || r.audit === filter.audit);
  const kept = filter.sort === 'rating' ? audited.sort((a, b) => adjustedOf(b) - adjustedOf(a)) : audited;
  return searchAnswer(site, { q, type, limit, corrected, sort: filter.sort }, kept.slice(0, limit), tags);
}

/** A match's adjusted rating for sort=rating: skills without a counted review, and agents, after the rated. */
const adjustedOf = (r: object) => {
  const rating = (r as { rating?: { count: number; adjusted: number | null } }).rating;
  return rating?.count && rating.adjusted !== null ? rating.adjusted : -1;
};

/**
 * `audit=pass`: only skills whose current version passed its audit (agents and tags as before).
 * `sort=rating`: the best matches ordered by their Bayesian-adjusted rating, relevance breaking ties.
 */
export interface SearchFilter {
  audit?: 'pass';
  sort?: 'relevance' | 'rating';
}
/** How many more matches are ranked when the audit filter will drop some. */
const AUDIT_FILTER_WIDENING = 3;

/** A skill's rating as a search hit states it. */
function ratingHit(r: Pick<Rating, 'count' | 'total' | 'adjusted'> | undefined) {
  if (!r?.count) return { count: 0, mean: null, adjusted: null };
  return { count: r.count, mean: Math.round((r.total / r.count) * 100) / 100, adjusted: r.adjusted };
}

/** The first line of a text, at most 160 characters (an ellipsis marks a cut). */
function oneLine(text: string | null): string {
  const line = (text ?? '').trim().split(/\r?\n/, 1)[0]?.trim() ?? '';
  return line.length > 160 ? `${line.slice(0, 159).trimEnd()}…` : line;
}

/**
 * The answer from what matched: agents, skills and tags merged by score, best first, `limit` of
 * them, each with the URL of its document and of its page, and what tells it apart from a result
 * of the same title (seller, price, sales, preview); scores rounded to 4 decimals.
 */
export function searchAnswer(
  site: SiteInfo,
  asked: { q: string; type: SearchType; limit: number; corrected: string | null; sort?: 'relevance' | 'rating' },
  ranked: RankedMatch[],
  tags: TagHit[],
): SearchAnswer {
  const base = site.baseUrl;
  const hits: Omit<SearchHit, 'label'>[] = [
    ...ranked.map((r) => {
      const common = {
        id: r.key,
        title: r.title,
        highlight: r.highlight,
        score: Number(r.score),
        seller: {
          handle: r.sellerHandle,
          displayName: r.sellerName,
          score: Math.round(Number(r.sellerScore) * 100) / 100,
        },
        preview: oneLine(r.preview),
      };
      return r.type === 'agent'
        ? {
            type: 'agent' as const,
            ...common,
            url: `${base}/api/agents/${r.key}/agent-card.json`,
            page: `${base}/agents/${r.key}`,
            sales90d: Number(r.sales),
            publishedSkills: Number(r.publishedSkills ?? 0),
          }
        : {
            type: 'post' as const,
            ...common,
            url: `${base}/api/posts/${r.key}`,
            page: `${base}/skills/${r.key}`,
            priceAtomic: r.priceAtomic ?? '0',
            priceUsdc: formatUsdc(BigInt(r.priceAtomic ?? '0')),
            buyers: Number(r.sales),
            audit: r.audit ?? 'pending',
            rating: ratingHit(r.rating),
            ...(r.versionLabel ? { version: r.versionLabel } : {}),
          };
    }),
    ...tags.map((r) => ({
      type: 'tag' as const,
      id: r.tag,
      title: `${r.tag} (${r.posts} skills)`,
      highlight: null,
      score: Number(r.score),
      url: `${base}/api/discovery/search?q=${encodeURIComponent(r.tag)}&type=posts`,
      page: `${base}/search?q=${encodeURIComponent(r.tag)}`,
    })),
  ]
    .sort((a, b) => (asked.sort === 'rating' ? adjustedOf(b) - adjustedOf(a) : 0) || b.score - a.score)
    .slice(0, asked.limit);
  const titles = new Map<string, number>();
  for (const h of hits) titles.set(h.title, (titles.get(h.title) ?? 0) + 1);
  return {
    query: asked.q,
    type: asked.type,
    ...(asked.corrected ? { didYouMean: asked.corrected } : {}),
    results: hits.map((h) => ({
      ...h,
      label: h.seller && (titles.get(h.title) ?? 0) > 1 ? `${h.title} (by @${h.seller.handle})` : h.title,
      score: Math.round(h.score * 1e4) / 1e4,
    })),
  };
}
