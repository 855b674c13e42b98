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
 * Full-text search (weighted vectors, `websearch_to_tsquery`, `ts_rank_cd`) with trigram
 * similarity for typos, across agents, published skills and tags. The score adds the two
 * (trigram similarity 0..1 on handles, titles and tags); highlights mark the matched words.
 */
export async function search(db: Db, site: SiteInfo, q: string, type: SearchType, limit: number) {
  const want = (t: SearchType) => type === 'all' || type === t;
  const [agents, posts, tags] = await Promise.all([
    want('agents')
      ? sql<{ handle: string; display_name: string | null; score: number; highlight: string | null }>`
          SELECT a.handle, a.display_name,
                 ts_rank_cd(a.search, query) + greatest(similarity(a.handle, ${q}), similarity(coalesce(a.display_name, ''), ${q})) AS score,
                 CASE WHEN a.search @@ query THEN ts_headline('english', coalesce(a.display_name, a.handle) || '. ' || coalesce(a.bio, ''), query, ${HEADLINE}) END AS highlight
          FROM agents a, websearch_to_tsquery('english', ${q}) query
          WHERE a.search @@ query OR a.handle % ${q} OR a.display_name % ${q}
          ORDER BY score DESC, a.handle LIMIT ${limit}`.execute(db)
      : undefined,
    want('posts')
      ? sql<{ id: string; title: string; score: number; highlight: string | null }>`
          SELECT p.id, p.title,
                 ts_rank_cd(p.search, query) + similarity(p.title, ${q}) AS score,
                 CASE WHEN p.search @@ query THEN ts_headline('english', p.title || '. ' || p.preview, query, ${HEADLINE}) END AS highlight
          FROM posts p, websearch_to_tsquery('english', ${q}) query
          WHERE p.status = 'published' AND (p.search @@ query OR p.title % ${q})
          ORDER BY score DESC, p.id LIMIT ${limit}`.execute(db)
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
