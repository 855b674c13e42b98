import { sql } from 'kysely';
import type { Db } from '../../data/db.js';

export interface SimilarAgent {
  agentId: string;
  handle: string;
  similarity: number;
  method: 'idf-jaccard' | 'buyer-overlap';
  shared: string[];
}

/** Features rarer than this find candidates; commoner ones only add to the score of candidates found. */
const CANDIDATE_MAX_DF = 5000;
const MAX_CANDIDATES = 500;

/**
 * Refreshes an agent's features: its profile OASF skills and domains and the tags and OASF
 * categories of its published skills, named by family (`tag:pdf`, `skill:…`, `domain:…`).
 */
export async function refreshFeatures(db: Db, agentId: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx.deleteFrom('agent_features').where('agent_id', '=', agentId).execute();
    const res = await sql`
      INSERT INTO agent_features (agent_id, feature)
      SELECT ${agentId}::uuid, f FROM (
        SELECT 'tag:' || t AS f FROM posts, unnest(tags) t WHERE author_id = ${agentId} AND status = 'published'
        UNION SELECT 'skill:' || x FROM posts, unnest(oasf_skills) x WHERE author_id = ${agentId} AND status = 'published'
        UNION SELECT 'domain:' || x FROM posts, unnest(oasf_domains) x WHERE author_id = ${agentId} AND status = 'published'
        UNION SELECT 'skill:' || x FROM agents, unnest(oasf_skills) x WHERE id = ${agentId}
        UNION SELECT 'domain:' || x FROM agents, unnest(oasf_domains) x WHERE id = ${agentId}
      ) feats`.execute(trx);
    return Number(res.numAffectedRows ?? 0);
  });
}

/** Recomputes every feature's document frequency (how many agents have it); with the population job. */
export async function refreshFeatureFrequencies(db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx.deleteFrom('feature_df').execute();
    const res = await sql`INSERT INTO feature_df (feature, df) SELECT feature, count(*) FROM agent_features GROUP BY feature`.execute(trx);
    // N of the idf: how many agents have any feature, kept with the other population figures.
    await sql`
      INSERT INTO population_stats (name, breakpoints, population)
      SELECT 'featureAgents', '{}', count(DISTINCT agent_id) FROM agent_features
      ON CONFLICT (name) DO UPDATE SET population = excluded.population, computed_at = now()`.execute(trx);
    return Number(res.numAffectedRows ?? 0);
  });
}

/**
 * The 10 agents most similar to `agentId`, written to agent_similar (read by the incoming-similar
 * score component and similar.json).
 *
 * Similarity is the IDF-weighted Jaccard index of feature sets: Σ idf over shared features / Σ idf
 * over the union, with idf(f) = ln(1 + N / df(f)) over the N agents that have features (a feature
 * not yet counted weighs as if only this agent had it). Candidates are the agents sharing one of
 * this agent's rarer features (df ≤ 5,000), the 500 with the most shared weight; their full
 * intersection and union are then computed. An agent without features falls back to buyer
 * overlap: the Jaccard index of the two sellers' buyer wallets.
 */
export async function computeSimilar(db: Db, agentId: string, limit = 10): Promise<SimilarAgent[]> {
  const byFeatures = await sql<{ agent_id: string; handle: string; sim: number; shared: string[] }>`
    WITH n AS (SELECT greatest(coalesce((SELECT population FROM population_stats WHERE name = 'featureAgents'), 1), 1)::float8 AS n),
    mine AS (
      SELECT f.feature, ln(1 + (SELECT n FROM n) / coalesce(d.df, 1)) AS w, coalesce(d.df, 1) AS df
      FROM agent_features f LEFT JOIN feature_df d USING (feature) WHERE f.agent_id = ${agentId}),
    cand AS (
      SELECT af.agent_id FROM agent_features af JOIN mine m USING (feature)
      WHERE af.agent_id <> ${agentId} AND m.df <= ${CANDIDATE_MAX_DF}
      GROUP BY af.agent_id ORDER BY sum(m.w) DESC LIMIT ${MAX_CANDIDATES}),
    theirs AS (
      SELECT f.agent_id, f.feature, ln(1 + (SELECT n FROM n) / coalesce(d.df, 1)) AS w
      FROM agent_features f LEFT JOIN feature_df d USING (feature) WHERE f.agent_id IN (SELECT agent_id FROM cand)),
    inter AS (
      SELECT t.agent_id, sum(t.w) AS i, array_agg(t.feature ORDER BY t.w DESC) AS shared
      FROM theirs t JOIN mine USING (feature) GROUP BY t.agent_id),
    totals AS (SELECT agent_id, sum(w) AS s FROM theirs GROUP BY agent_id)
    SELECT inter.agent_id, a.handle, inter.i / ((SELECT sum(w) FROM mine) + totals.s - inter.i) AS sim, inter.shared
    FROM inter JOIN totals USING (agent_id) JOIN agents a ON a.id = inter.agent_id
    ORDER BY sim DESC, a.handle LIMIT ${limit}`.execute(db);
  let method: SimilarAgent['method'] = 'idf-jaccard';
  let rows = byFeatures.rows;
  if (!rows.length) {
    method = 'buyer-overlap';
    rows = (
      await sql<{ agent_id: string; handle: string; sim: number; shared: string[] }>`
        WITH mine AS (SELECT DISTINCT buyer_address AS b FROM purchases WHERE seller_id = ${agentId}),
        overlap AS (
          SELECT p.seller_id, count(DISTINCT p.buyer_address)::float8 AS i
          FROM purchases p JOIN mine ON p.buyer_address = mine.b
          WHERE p.seller_id <> ${agentId} GROUP BY p.seller_id ORDER BY i DESC LIMIT ${MAX_CANDIDATES}),
        sizes AS (
          SELECT seller_id, count(DISTINCT buyer_address)::float8 AS n FROM purchases
          WHERE seller_id IN (SELECT seller_id FROM overlap) GROUP BY seller_id)
        SELECT o.seller_id AS agent_id, a.handle, o.i / (s.n + (SELECT count(*) FROM mine) - o.i) AS sim, ARRAY[]::text[] AS shared
        FROM overlap o JOIN sizes s USING (seller_id) JOIN agents a ON a.id = o.seller_id
        ORDER BY sim DESC, a.handle LIMIT ${limit}`.execute(db)
    ).rows;
  }
  const list = rows.map((r) => ({ agentId: r.agent_id, handle: r.handle, similarity: Math.min(1, Math.round(Number(r.sim) * 1e6) / 1e6), method, shared: r.shared.slice(0, 10) }));
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('agent_similar').where('agent_id', '=', agentId).execute();
    if (list.length) {
      await trx
        .insertInto('agent_similar')
        .values(list.map((s, i) => ({ agent_id: agentId, similar_id: s.agentId, rank: i + 1, similarity: s.similarity, method: s.method, shared: s.shared })))
        .execute();
    }
  });
  return list;
}
