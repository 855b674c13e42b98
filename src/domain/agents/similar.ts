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
/**
 * Agents read per seed feature when choosing candidates: a feature more common than this
 * contributes the 2,000 agents that follow this agent in id order (wrapping around; ids are
 * random, so a uniform sample that differs per agent and favours no one), not all its agents. At
 * 100k agents a seed feature had ~1,000 agents on average and some far more, and reading them all
 * cost 5.5-6.7 ms an agent; capped at 2,000 it costs ~2 ms, and on a sample of 100 agents 82% of
 * the top-10 entries stayed the same (mean top-10 similarity 0.128 against 0.130).
 */
const SEED_POSTINGS_CAP = 2000;

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
  // Signatures vacuumed too, so the similarity reads are index-only scans (the visibility map is set).
  await sql`VACUUM (ANALYZE) agent_signature`.execute(db);
  await sql`ANALYZE agent_features, feature_df`.execute(db);
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

type Row = { me: string; agent_id: string; handle: string; sim: number; shared: string[] };

/**
 * The 10 agents most similar to `agentId`, written to agent_similar (read by the incoming-similar
 * score component and similar.json).
 */
export async function computeSimilar(db: Db, agentId: string, limit = 10): Promise<SimilarAgent[]> {
  return (await computeSimilarMany(db, [agentId], limit)).get(agentId)!;
}

/**
 * The most similar agents of each of `agentIds`, in three statements whatever their number (plus
 * one transaction when some lists changed), written to agent_similar.
 *
 * Similarity is the IDF-weighted Jaccard index of the agents' signatures: Σ idf over shared
 * features / Σ idf over the union, idf(f) = ln(1 + N / df(f)) over the N agents with features. A
 * signature is an agent's 50 rarest features (the most telling; prolific agents have thousands).
 * Candidates are the agents whose signature holds one of this agent's 8 rarest features (at most
 * 2,000 read per feature, those following this agent in id order), the 300 sharing most of them. Every read is bounded (8 × 2,000 and
 * 300 × 50 rows an agent), whatever the marketplace's size. An agent without features, or sharing none, falls back to buyer overlap:
 * the Jaccard index of buyer wallets.
 */
export async function computeSimilarMany(db: Db, agentIds: string[], limit = 10): Promise<Map<string, SimilarAgent[]>> {
  const ids = [...new Set(agentIds)];
  const lists = new Map<string, SimilarAgent[]>(ids.map((id) => [id, []]));
  if (!ids.length) return lists;
  const toList = (rows: Row[], method: SimilarAgent['method']) => {
    for (const r of rows) {
      lists.get(r.me)!.push({ agentId: r.agent_id, handle: r.handle, similarity: Math.min(1, Math.round(Number(r.sim) * 1e6) / 1e6), method, shared: (r.shared ?? []).slice(0, 10) });
    }
  };
  // Scored where the signatures are: shipping 300 candidates × 50 features to the worker to sum
  // them there cost more than the sums (row decoding and garbage in the worker). Each candidate is
  // read through the (agent_id, feature) key, never a scan of every signature.
  // One statement for all agents, but each agent still scored on its own (LATERAL): candidates
  // through the (feature) index, each candidate's signature through the (agent_id) index, both
  // index-only; the shared features are listed for the winners only. A set-wide join of every
  // candidate's signature spilled to disk and cost twice as much.
  const idf = await sql<Row>`
    WITH q AS (
      SELECT agent_id AS me, sum(weight) AS total,
             array_agg(feature ORDER BY weight DESC, feature) AS feats,
             array_agg(weight ORDER BY weight DESC, feature) AS weights
      FROM agent_signature WHERE agent_id = ANY(${ids}::uuid[]) GROUP BY agent_id)
    SELECT q.me, x.agent_id, a.handle, x.sim,
           ARRAY(SELECT u.f FROM unnest(q.feats) WITH ORDINALITY u(f, o)
                 WHERE EXISTS (SELECT 1 FROM agent_signature t WHERE t.agent_id = x.agent_id AND t.feature = u.f)
                 ORDER BY u.o LIMIT 10) AS shared
    FROM q CROSS JOIN LATERAL (
      SELECT c.agent_id, y.inter / (q.total + y.total - y.inter) AS sim
      FROM (
        SELECT p.agent_id FROM unnest(q.feats[1:${SEED_FEATURES}]) f(feature) CROSS JOIN LATERAL (
          -- The agents after this one in id order, wrapping around: each agent samples a different
          -- stretch of a common feature's agents, so none is everybody's candidate.
          SELECT * FROM (
            (SELECT s.agent_id, s.weight FROM agent_signature s WHERE s.feature = f.feature AND s.agent_id > q.me ORDER BY s.agent_id LIMIT ${SEED_POSTINGS_CAP})
            UNION ALL
            (SELECT s.agent_id, s.weight FROM agent_signature s WHERE s.feature = f.feature AND s.agent_id < q.me ORDER BY s.agent_id LIMIT ${SEED_POSTINGS_CAP})) w
          LIMIT ${SEED_POSTINGS_CAP}) p
        GROUP BY p.agent_id ORDER BY sum(p.weight) DESC, p.agent_id LIMIT ${MAX_CANDIDATES}) c
      CROSS JOIN LATERAL (
        SELECT sum(s.weight) AS total,
               coalesce(sum(least(s.weight, m.weight)) FILTER (WHERE m.feature IS NOT NULL), 0) AS inter -- least() skips NULLs
        FROM agent_signature s LEFT JOIN unnest(q.feats, q.weights) m(feature, weight) ON m.feature = s.feature
        WHERE s.agent_id = c.agent_id) y
      WHERE y.inter > 0
      ORDER BY sim DESC, c.agent_id LIMIT ${limit}) x
    JOIN agents a ON a.id = x.agent_id
    ORDER BY q.me, x.sim DESC, x.agent_id`.execute(db);
  toList(idf.rows, 'idf-jaccard');
  const unmatched = ids.filter((id) => !lists.get(id)!.length);
  if (unmatched.length) {
    const overlap = await sql<Row>`
      WITH mine AS (SELECT DISTINCT seller_id AS me, buyer_address AS b FROM purchases WHERE seller_id = ANY(${unmatched}::uuid[])),
      my_size AS (SELECT me, count(*)::float8 AS n FROM mine GROUP BY me),
      overlap AS (
        SELECT m.me, p.seller_id, count(DISTINCT p.buyer_address)::float8 AS i
        FROM mine m JOIN purchases p ON p.buyer_address = m.b AND p.seller_id <> m.me
        GROUP BY m.me, p.seller_id),
      cand AS (
        SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY me ORDER BY i DESC, seller_id) AS r FROM overlap) o
        WHERE r <= ${MAX_CANDIDATES}),
      sizes AS (
        SELECT seller_id, count(DISTINCT buyer_address)::float8 AS n FROM purchases
        WHERE seller_id IN (SELECT seller_id FROM cand) GROUP BY seller_id),
      ranked AS (
        SELECT c.me, c.seller_id AS agent_id, a.handle, c.i / (s.n + ms.n - c.i) AS sim,
               row_number() OVER (PARTITION BY c.me ORDER BY c.i / (s.n + ms.n - c.i) DESC, a.handle) AS rank
        FROM cand c JOIN sizes s USING (seller_id) JOIN my_size ms ON ms.me = c.me JOIN agents a ON a.id = c.seller_id)
      SELECT me, agent_id, handle, sim, ARRAY[]::text[] AS shared FROM ranked WHERE rank <= ${limit} ORDER BY me, rank`.execute(db);
    toList(overlap.rows, 'buyer-overlap');
  }
  // Most recomputes find the same lists: then one read replaces the rewrite.
  const stored = await db
    .selectFrom('agent_similar')
    .select(['agent_id', 'similar_id', 'similarity', 'method', 'shared'])
    .where('agent_id', 'in', ids)
    .orderBy('agent_id')
    .orderBy('rank')
    .execute();
  const storedOf = new Map<string, typeof stored>();
  for (const r of stored) storedOf.set(r.agent_id, [...(storedOf.get(r.agent_id) ?? []), r]);
  const changed = ids.filter((id) => {
    const list = lists.get(id)!;
    const was = storedOf.get(id) ?? [];
    return !(
      was.length === list.length &&
      was.every((r, i) => r.similar_id === list[i]!.agentId && Number(r.similarity) === list[i]!.similarity && r.method === list[i]!.method && r.shared.join('\n') === list[i]!.shared.join('\n'))
    );
  });
  if (changed.length) {
    const rows = changed.flatMap((id) => lists.get(id)!.map((s, i) => ({ agent_id: id, similar_id: s.agentId, rank: i + 1, similarity: s.similarity, method: s.method, shared: s.shared })));
    await db.transaction().execute(async (trx) => {
      // An event's one-agent job and a batch can rewrite the same list at once: the second waits
      // (locks taken in id order, so two batches never deadlock) instead of failing on the key.
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(id::text, 8004)) FROM unnest(${[...changed].sort()}::uuid[]) id ORDER BY id`.execute(trx);
      await trx.deleteFrom('agent_similar').where('agent_id', 'in', changed).execute();
      if (rows.length) await trx.insertInto('agent_similar').values(rows).execute();
    });
  }
  return lists;
}
