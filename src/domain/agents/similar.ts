import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../data/db.js';

export interface SimilarAgent {
  agentId: string;
  handle: string;
  similarity: number;
  method: 'idf-jaccard' | 'buyer-overlap';
  shared: string[];
}

/** Features per agent that represent it in similarity: its rarest, which say the most about it. */
export const SIGNATURE_SIZE = 50;
/** Candidates come from agents sharing one of the 8 rarest signature features. */
const SEED_FEATURES = 8;
const MAX_CANDIDATES = 300;

/** N of the idf, as SQL: the agents with features, as last counted with the frequencies. */
const N_SQL = sql.raw(`greatest(coalesce((SELECT population FROM population_stats WHERE name = 'featureAgents'), 1), 1)::float8`);

/** Signatures (up to 50 rarest features, weighted ln(1 + N/df)) of the agents matching `filter`. */
const insertSignatures = (filter: RawBuilder<unknown>) => sql`
  INSERT INTO agent_signature (agent_id, feature, weight)
  SELECT agent_id, feature, ln(1 + ${N_SQL} / df) FROM (
    SELECT f.agent_id, f.feature, coalesce(d.df, 1) AS df,
           row_number() OVER (PARTITION BY f.agent_id ORDER BY coalesce(d.df, 1), f.feature) AS r
    FROM agent_features f LEFT JOIN feature_df d USING (feature) WHERE ${filter}) ranked
  WHERE r <= ${SIGNATURE_SIZE}`;

/**
 * Refreshes one agent's features (its profile OASF skills and domains, and the tags and OASF
 * categories of its published skills, named by family: `tag:pdf`, `skill:…`, `domain:…`) and its
 * similarity signature.
 */
export async function refreshFeatures(db: Db, agentId: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx.deleteFrom('agent_features').where('agent_id', '=', agentId).execute();
    await sql`
      INSERT INTO agent_features (agent_id, feature)
      SELECT DISTINCT ${agentId}::uuid, f FROM (
        SELECT 'tag:' || t AS f FROM posts, unnest(tags) t WHERE author_id = ${agentId} AND status = 'published'
        UNION ALL SELECT 'skill:' || x FROM posts, unnest(oasf_skills) x WHERE author_id = ${agentId} AND status = 'published'
        UNION ALL SELECT 'domain:' || x FROM posts, unnest(oasf_domains) x WHERE author_id = ${agentId} AND status = 'published'
        UNION ALL SELECT 'skill:' || x FROM agents, unnest(oasf_skills) x WHERE id = ${agentId}
        UNION ALL SELECT 'domain:' || x FROM agents, unnest(oasf_domains) x WHERE id = ${agentId}
      ) feats`.execute(trx);
    await trx.deleteFrom('agent_signature').where('agent_id', '=', agentId).execute();
    const sig = await insertSignatures(sql`f.agent_id = ${agentId}`).execute(trx);
    return Number(sig.numAffectedRows ?? 0);
  });
}

/**
 * Rebuilds every agent's features, the frequencies and every signature in set-based passes (the
 * full recompute starts with it, so the per-agent similarities that follow see true frequencies).
 */
export async function rebuildAllFeatures(db: Db): Promise<number> {
  await db.transaction().execute(async (trx) => {
    await sql`TRUNCATE agent_features`.execute(trx);
    await sql`
      INSERT INTO agent_features (agent_id, feature)
      SELECT DISTINCT agent_id, f FROM (
        SELECT author_id AS agent_id, 'tag:' || t AS f FROM posts, unnest(tags) t WHERE status = 'published'
        UNION ALL SELECT author_id, 'skill:' || x FROM posts, unnest(oasf_skills) x WHERE status = 'published'
        UNION ALL SELECT author_id, 'domain:' || x FROM posts, unnest(oasf_domains) x WHERE status = 'published'
        UNION ALL SELECT id, 'skill:' || x FROM agents, unnest(oasf_skills) x
        UNION ALL SELECT id, 'domain:' || x FROM agents, unnest(oasf_domains) x
      ) feats`.execute(trx);
  });
  await refreshFeatureFrequencies(db);
  const signatures = await db.transaction().execute(async (trx) => {
    await sql`TRUNCATE agent_signature`.execute(trx);
    const res = await insertSignatures(sql`TRUE`).execute(trx);
    return Number(res.numAffectedRows ?? 0);
  });
  // Millions of rows just replaced: without fresh statistics the planner would scan them whole
  // for every similarity lookup (seen: 1.4 s per lookup until autovacuum got to them).
  await sql`ANALYZE agent_features, agent_signature, feature_df`.execute(db);
  return signatures;
}

/**
 * Recomputes every feature's document frequency (how many agents have it) and N; with the
 * population job. Signatures keep the weights of their last refresh until their agent's next one.
 */
export async function refreshFeatureFrequencies(db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx.deleteFrom('feature_df').execute();
    const res = await sql`INSERT INTO feature_df (feature, df) SELECT feature, count(*) FROM agent_features GROUP BY feature`.execute(trx);
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
 * Similarity is the IDF-weighted Jaccard index of the agents' signatures: Σ idf over shared
 * features / Σ idf over the union, idf(f) = ln(1 + N / df(f)) over the N agents with features. A
 * signature is an agent's 50 rarest features (the most telling; prolific agents have thousands).
 * Candidates are the agents whose signature holds one of this agent's 8 rarest features, the 300
 * sharing most of them. Every read is bounded (300 × 50 rows), whatever the marketplace's size.
 * An agent without features falls back to buyer overlap: the Jaccard index of buyer wallets.
 */
export async function computeSimilar(db: Db, agentId: string, limit = 10): Promise<SimilarAgent[]> {
  const mine = await db.selectFrom('agent_signature').select(['feature', 'weight']).where('agent_id', '=', agentId).orderBy('weight', 'desc').execute();
  let method: SimilarAgent['method'] = 'idf-jaccard';
  let rows: Array<{ agent_id: string; handle: string; sim: number; shared: string[] }> = [];
  if (mine.length) {
    const seeds = mine.slice(0, SEED_FEATURES).map((f) => f.feature);
    const myTotal = mine.reduce((a, f) => a + f.weight, 0);
    // Scored where the signatures are: shipping 300 candidates × 50 features to the worker to sum
    // them there cost more than the sums (row decoding and garbage in the worker).
    rows = (
      await sql<{ agent_id: string; handle: string; sim: number; shared: string[] }>`
        WITH mine AS (SELECT feature, weight FROM agent_signature WHERE agent_id = ${agentId}),
        cand AS (
          SELECT agent_id FROM agent_signature WHERE feature = ANY(${seeds}::text[]) AND agent_id <> ${agentId}
          GROUP BY agent_id ORDER BY sum(weight) DESC, agent_id LIMIT ${MAX_CANDIDATES}),
        -- Per candidate through the (agent_id, feature) key, never a scan of every signature.
        scored AS (
          SELECT c.agent_id, x.inter / (${myTotal}::float8 + x.total - x.inter) AS sim, x.shared
          FROM cand c CROSS JOIN LATERAL (
            SELECT sum(s.weight) AS total,
                   coalesce(sum(least(s.weight, m.weight)) FILTER (WHERE m.feature IS NOT NULL), 0) AS inter, -- least() skips NULLs
                   array_agg(s.feature ORDER BY m.weight DESC, s.feature) FILTER (WHERE m.feature IS NOT NULL) AS shared
            FROM agent_signature s LEFT JOIN mine m ON m.feature = s.feature
            WHERE s.agent_id = c.agent_id) x
          WHERE x.inter > 0
          ORDER BY sim DESC, c.agent_id LIMIT ${limit})
        SELECT sc.agent_id, a.handle, sc.sim, coalesce(sc.shared, '{}') AS shared
        FROM scored sc JOIN agents a ON a.id = sc.agent_id
        ORDER BY sc.sim DESC, sc.agent_id`.execute(db)
    ).rows;
  }
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
  // Most recomputes find the same list: then one read replaces a four-statement transaction.
  const stored = await db.selectFrom('agent_similar').select(['similar_id', 'similarity', 'method', 'shared']).where('agent_id', '=', agentId).orderBy('rank').execute();
  const same =
    stored.length === list.length &&
    stored.every((r, i) => r.similar_id === list[i]!.agentId && Number(r.similarity) === list[i]!.similarity && r.method === list[i]!.method && r.shared.join('\n') === list[i]!.shared.join('\n'));
  if (same) return list;
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
