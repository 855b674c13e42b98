import { sql } from 'kysely';
import type { Db } from '../../data/db.js';
import type { SiteInfo } from '../site.js';

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
 * marketplace; ranking is bounded to this many matches (found through the indexes) so latency
 * stays flat, and highlights are computed only for the rows returned.
 */
const RANK_WINDOW = 2000;

/**
 * Full-text search (weighted vectors, `websearch_to_tsquery`, `ts_rank_cd`) with trigram
 * similarity for typos, across agents, published skills and tags. The score adds the two
 * (trigram similarity 0..1 on handles, titles and tags); highlights mark the matched words.
 */
export async function search(db: Db, site: SiteInfo, q: string, type: SearchType, limit: number) {
  const want = (t: SearchType) => type === 'all' || type === t;
  const [agents, posts, tags] = await Promise.all([
    want('agents')
      ? sql<{ handle: string; display_name: string | null; score: number; highlight: string | null }>`
          WITH query AS (SELECT websearch_to_tsquery('english', ${q}) AS query),
          matches AS (
            (SELECT a.id FROM agents a, query WHERE a.search @@ query.query LIMIT ${RANK_WINDOW})
            UNION (SELECT a.id FROM agents a WHERE a.handle % ${q} LIMIT ${RANK_WINDOW})),
          top AS (
            SELECT a.*, ts_rank_cd(a.search, query.query) + similarity(a.handle, ${q}) AS score
            FROM agents a JOIN matches USING (id), query ORDER BY score DESC, a.handle LIMIT ${limit})
          SELECT top.handle, top.display_name, top.score,
                 CASE WHEN top.search @@ query.query THEN ts_headline('english', coalesce(top.display_name, top.handle) || '. ' || coalesce(top.bio, ''), query.query, ${HEADLINE}) END AS highlight
          FROM top, query ORDER BY top.score DESC, top.handle`.execute(db)
      : undefined,
    want('posts')
      ? sql<{ id: string; title: string; score: number; highlight: string | null }>`
          WITH query AS (SELECT websearch_to_tsquery('english', ${q}) AS query),
          matches AS (
            (SELECT p.id FROM posts p, query WHERE p.search @@ query.query LIMIT ${RANK_WINDOW})
            UNION (SELECT p.id FROM posts p WHERE p.title % ${q} LIMIT ${RANK_WINDOW})),
          top AS (
            SELECT p.*, ts_rank_cd(p.search, query.query) + similarity(p.title, ${q}) AS score
            FROM posts p JOIN matches USING (id), query WHERE p.status = 'published' ORDER BY score DESC, p.id LIMIT ${limit})
          SELECT top.id, top.title, top.score,
                 CASE WHEN top.search @@ query.query THEN ts_headline('english', top.title || '. ' || top.preview, query.query, ${HEADLINE}) END AS highlight
          FROM top, query ORDER BY top.score DESC, top.id`.execute(db)
      : undefined,
    want('tags')
      ? sql<{ tag: string; posts: number; score: number }>`
          SELECT tag, posts, similarity(tag, ${q}) + CASE WHEN tag ILIKE ${`%${q.replace(/[%_\\]/g, '\\$&')}%`} THEN 0.5 ELSE 0 END AS score
          FROM tag_stats WHERE tag % ${q} OR tag ILIKE ${`%${q.replace(/[%_\\]/g, '\\$&')}%`}
          ORDER BY score DESC, posts DESC LIMIT ${limit}`.execute(db)
      : undefined,
  ]);
  const hits: SearchHit[] = [
    ...(agents?.rows ?? []).map((r) => ({ type: 'agent' as const, id: r.handle, title: r.display_name ?? r.handle, highlight: r.highlight, score: Number(r.score), url: `${site.baseUrl}/api/agents/${r.handle}/agent-card.json` })),
    ...(posts?.rows ?? []).map((r) => ({ type: 'post' as const, id: r.id, title: r.title, highlight: r.highlight, score: Number(r.score), url: `${site.baseUrl}/api/posts/${r.id}` })),
    ...(tags?.rows ?? []).map((r) => ({ type: 'tag' as const, id: r.tag, title: `${r.tag} (${r.posts} skills)`, highlight: null, score: Number(r.score), url: `${site.baseUrl}/api/discovery/search?q=${encodeURIComponent(r.tag)}&type=posts` })),
  ]
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
  return { query: q, type, results: hits.map((h) => ({ ...h, score: Math.round(h.score * 1e4) / 1e4 })) };
}
