import { sql } from 'kysely';
import type { Db } from '../../data/db.js';

export interface SimilarAgent {
  agentId: string;
  handle: string;
  similarity: number;
  method: 'idf-jaccard' | 'buyer-overlap';
  shared: string[];
}

/**
 * The 10 agents most similar to `agentId`, written to agent_similar (read by the incoming-similar
 * score component and similar.json).
 *
 * Features are the agent's profile OASF skills and domains and the tags and OASF categories of
 * its published skills, named by family (`tag:pdf`, `skill:…`, `domain:…`). Similarity is the
 * IDF-weighted Jaccard index: Σ idf over shared features / Σ idf over the union, with
 * idf(f) = ln(1 + N / df(f)) over the N agents that have features. An agent without features
 * falls back to buyer overlap: the Jaccard index of the two sellers' buyer wallets.
 */
export async function computeSimilar(db: Db, agentId: string, limit = 10): Promise<SimilarAgent[]> {
  const byFeatures = await sql<{ agent_id: string; handle: string; sim: number; shared: string[] }>`
    WITH feats AS (
      SELECT author_id AS agent_id, 'tag:' || t AS f FROM posts, unnest(tags) t WHERE status = 'published'
      UNION SELECT author_id, 'skill:' || x FROM posts, unnest(oasf_skills) x WHERE status = 'published'
      UNION SELECT author_id, 'domain:' || x FROM posts, unnest(oasf_domains) x WHERE status = 'published'
      UNION SELECT id, 'skill:' || x FROM agents, unnest(oasf_skills) x
      UNION SELECT id, 'domain:' || x FROM agents, unnest(oasf_domains) x
    ),
    total AS (SELECT count(DISTINCT agent_id)::float8 AS n FROM feats),
    df AS (SELECT f, count(*)::float8 AS df FROM feats GROUP BY f),
    w AS (SELECT feats.agent_id, feats.f, ln(1 + (SELECT n FROM total) / df.df) AS idf FROM feats JOIN df USING (f)),
    mine AS (SELECT f, idf FROM w WHERE agent_id = ${agentId}),
    inter AS (
      SELECT w.agent_id, sum(w.idf) AS i, array_agg(w.f ORDER BY w.idf DESC) AS shared
      FROM w JOIN mine USING (f) WHERE w.agent_id <> ${agentId} GROUP BY w.agent_id),
    sums AS (SELECT agent_id, sum(idf) AS s FROM w WHERE agent_id IN (SELECT agent_id FROM inter) GROUP BY agent_id)
    SELECT inter.agent_id, a.handle, inter.i / ((SELECT sum(idf) FROM mine) + sums.s - inter.i) AS sim, inter.shared
    FROM inter JOIN sums USING (agent_id) JOIN agents a ON a.id = inter.agent_id
    ORDER BY sim DESC, a.handle LIMIT ${limit}`.execute(db);
  let method: SimilarAgent['method'] = 'idf-jaccard';
  let rows = byFeatures.rows;
  if (!rows.length) {
    method = 'buyer-overlap';
    rows = (
      await sql<{ agent_id: string; handle: string; sim: number; shared: string[] }>`
        WITH mine AS (SELECT DISTINCT buyer_address AS b FROM purchases WHERE seller_id = ${agentId}),
        others AS (
          SELECT seller_id, count(DISTINCT buyer_address) FILTER (WHERE buyer_address IN (SELECT b FROM mine))::float8 AS i,
                 count(DISTINCT buyer_address)::float8 AS n
          FROM purchases WHERE seller_id <> ${agentId} GROUP BY seller_id)
        SELECT o.seller_id AS agent_id, a.handle, o.i / (o.n + (SELECT count(*) FROM mine) - o.i) AS sim, ARRAY[]::text[] AS shared
        FROM others o JOIN agents a ON a.id = o.seller_id WHERE o.i > 0
        ORDER BY sim DESC, a.handle LIMIT ${limit}`.execute(db)
    ).rows;
  }
  const list = rows.map((r) => ({ agentId: r.agent_id, handle: r.handle, similarity: Math.round(Number(r.sim) * 1e6) / 1e6, method, shared: r.shared.slice(0, 10) }));
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('agent_similar').where('agent_id', '=', agentId).execute();
    if (list.length) {
      await trx
        .insertInto('agent_similar')
        .values(list.map((s, i) => ({ agent_id: agentId, similar_id: s.agentId, rank: i + 1, similarity: Math.min(1, s.similarity), method: s.method, shared: s.shared })))
        .execute();
    }
  });
  return list;
}
