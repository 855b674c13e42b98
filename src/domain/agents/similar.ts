import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../data/db.js';
import {
  loadSignatureSubset,
  MAX_CANDIDATES,
  readSignatures,
  SIGNATURES_STAT,
  type SignatureIndex,
} from './signature-index.js';

export interface SimilarAgent {
  agentId: string;
  handle: string;
  similarity: number;
  method: 'idf-jaccard' | 'buyer-overlap';
  shared: string[];
}

/** Features per agent that represent it in similarity: its rarest, which say the most about it. */
export const SIGNATURE_SIZE = 50;
/** N of the idf, as SQL: the agents with features, as last counted with the frequencies. */
const N_SQL = sql.raw(
  `greatest(coalesce((SELECT population FROM population_stats WHERE name = 'featureAgents'), 1), 1)::float8`,
);

/** Signatures (up to 50 rarest features, weighted ln(1 + N/df)) of the agents matching `filter`. */
const insertSignatures = (filter: RawBuilder<unknown>) => sql`
  INSERT INTO agent_signature (agent_id, feature, weight)
  SELECT agent_id, feature, ln(1 + ${N_SQL} / df) FROM (
    SELECT f.agent_id, f.feature, coalesce(d.df, 1) AS df,
           row_number() OVER (PARTITION BY f.agent_id ORDER BY coalesce(d.df, 1), f.feature) AS r
    FROM agent_features f LEFT JOIN feature_df d USING (feature) WHERE ${filter}) ranked
  WHERE r <= ${SIGNATURE_SIZE}
  ORDER BY agent_id, feature`;

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
  await replaceAll(db, 'agent_features', async (trx) => {
    await sql`
      INSERT INTO agent_features (agent_id, feature)
      SELECT DISTINCT agent_id, f FROM (
        SELECT author_id AS agent_id, 'tag:' || t AS f FROM posts, unnest(tags) t WHERE status = 'published'
        UNION ALL SELECT author_id, 'skill:' || x FROM posts, unnest(oasf_skills) x WHERE status = 'published'
        UNION ALL SELECT author_id, 'domain:' || x FROM posts, unnest(oasf_domains) x WHERE status = 'published'
        UNION ALL SELECT id, 'skill:' || x FROM agents, unnest(oasf_skills) x
        UNION ALL SELECT id, 'domain:' || x FROM agents, unnest(oasf_domains) x
      ) feats
      ORDER BY 1, 2`.execute(trx);
  });
  await refreshFeatureFrequencies(db);
  const signatures = await replaceAll(db, 'agent_signature', async (trx) =>
    Number((await insertSignatures(sql`TRUE`).execute(trx)).numAffectedRows ?? 0),
  );
  // Millions of rows just replaced: without fresh statistics the planner would scan them whole
  // for every similarity lookup (seen: 1.4 s per lookup until autovacuum got to them).
  // Signatures vacuumed too, so the similarity reads are index-only scans (the visibility map is set).
  await sql`VACUUM (ANALYZE) agent_signature`.execute(db);
  await sql`ANALYZE agent_features, feature_df`.execute(db);
  // Workers hold a snapshot of every signature for the pages that follow; this names it.
  await sql`
    INSERT INTO population_stats (name, breakpoints, population) VALUES (${SIGNATURES_STAT}, '{}', ${signatures})
    ON CONFLICT (name) DO UPDATE SET population = excluded.population, computed_at = clock_timestamp()`.execute(db);
  return signatures;
}

/**
 * Replaces every row of `table` in one transaction (readers wait for it, then see the new rows): empties
 * it, drops its secondary indexes, runs `fill` (which should insert in primary key order), and
 * builds the indexes again. Millions of inserts maintaining a (feature, agent) index in random
 * order cost ~50 s at 100k agents; building it once from the filled table costs a few.
 */
async function replaceAll<T>(
  db: Db,
  table: 'agent_features' | 'agent_signature',
  fill: (trx: Db) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`TRUNCATE ${sql.table(table)}`.execute(trx);
    const { rows: indexes } = await sql<{ name: string; def: string }>`
      SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
      WHERE i.indrelid = ${table}::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`.execute(
      trx,
    );
    for (const i of indexes) await sql`DROP INDEX ${sql.raw(i.name)}`.execute(trx);
    const result = await fill(trx);
    await sql`SET LOCAL maintenance_work_mem = '256MB'`.execute(trx);
    for (const i of indexes) await sql.raw(i.def).execute(trx);
    return result;
  });
}

/**
 * Recomputes every feature's document frequency (how many agents have it) and N; with the
 * population job. Signatures keep the weights of their last refresh until their agent's next one.
 */
export async function refreshFeatureFrequencies(db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    // The population job and the full recompute both refresh them, and can run at once: without
    // the lock the second one's delete missed the first one's rows and its insert failed on the key.
    await sql`SELECT pg_advisory_xact_lock(hashtextextended('feature_df', 8004))`.execute(trx);
    await trx.deleteFrom('feature_df').execute();
    const res =
      await sql`INSERT INTO feature_df (feature, df) SELECT feature, count(*) FROM agent_features GROUP BY feature`.execute(
        trx,
      );
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

/** Separators of a stored list read as text: unit (between fields) and record (between entries). */
const US = '\u001f';
const RS = '\u001e';

/**
 * The most similar agents of each of `agentIds`, written to agent_similar.
 *
 * Similarity is the IDF-weighted Jaccard index of the agents' signatures: Σ idf over shared
 * features / Σ idf over the union, idf(f) = ln(1 + N / df(f)) over the N agents with features. A
 * signature is an agent's 50 rarest features (the most telling; prolific agents have thousands).
 * Candidates are the agents whose signature holds one of this agent's 8 rarest features (at most
 * 2,000 read per feature, those following this agent in id order), the 300 sharing most of them
 * (see `SignatureIndex`). Ranked from `snapshot` when given and the agent's current signature is
 * the snapshot's (the full recompute's pages), otherwise from the rows the ranking needs, read
 * from PostgreSQL. An agent without features, or sharing none, falls back to buyer overlap: the
 * Jaccard index of buyer wallets.
 */
export async function computeSimilarMany(
  db: Db,
  agentIds: string[],
  limit = 10,
  snapshot?: SignatureIndex,
): Promise<Map<string, SimilarAgent[]>> {
  const ids = [...new Set(agentIds)];
  const lists = new Map<string, SimilarAgent[]>(ids.map((id) => [id, []]));
  if (!ids.length) return lists;
  const toList = (rows: Row[], method: SimilarAgent['method']) => {
    for (const r of rows) {
      lists.get(r.me)!.push({
        agentId: r.agent_id,
        handle: r.handle,
        similarity: Math.min(1, Math.round(Number(r.sim) * 1e6) / 1e6),
        method,
        shared: (r.shared ?? []).slice(0, 10),
      });
    }
  };
  // Ranked in the worker: PostgreSQL scoring 300 candidates an agent cost ~6 ms an agent at 100k
  // agents; the same ranking over arrays in memory costs a fraction of a millisecond.
  // From the snapshot only agents whose signature is still the snapshot's: one an event refreshed
  // since the rebuild is ranked from its current rows, not overwritten with the rebuild's ranking.
  const current = snapshot ? await readSignatures(db, ids) : [];
  const fromSnapshot = new Set(current.filter((row) => snapshot!.sameSignature(row)).map((row) => row.agentId));
  const rest = ids.filter((id) => !fromSnapshot.has(id));
  // A few spare entries: an agent deleted since (signatures have no foreign key) is dropped below.
  const want = limit + 5;
  const ranked = [...fromSnapshot].map((id) => ({ me: id, list: snapshot!.rank(id, want) }));
  if (rest.length) {
    const subset = await loadSignatureSubset(db, rest);
    for (const id of rest) ranked.push({ me: id, list: subset.rank(id, want) });
  }
  const winners = [...new Set(ranked.flatMap((r) => r.list.map((s) => s.agentId)))];
  const handles = new Map(
    winners.length
      ? (
          await db
            .selectFrom('agents')
            .select(['id', 'handle'])
            .where(sql<boolean>`id = ANY(${winners}::uuid[])`)
            .execute()
        ).map((a) => [a.id, a.handle])
      : [],
  );
  toList(
    ranked.flatMap(({ me, list }) =>
      list
        .filter((s) => handles.has(s.agentId))
        .slice(0, limit)
        .map((s) => ({
          me,
          agent_id: s.agentId,
          handle: handles.get(s.agentId)!,
          sim: s.similarity,
          shared: s.shared,
        })),
    ),
    'idf-jaccard',
  );
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
      SELECT me, agent_id, handle, sim, ARRAY[]::text[] AS shared FROM ranked WHERE rank <= ${limit} ORDER BY me, rank`.execute(
      db,
    );
    toList(overlap.rows, 'buyer-overlap');
  }
  // Most recomputes find the same lists: then one read replaces the rewrite. Each stored list comes
  // back as one line of text (an array column per entry cost more to parse than the rest of the read).
  const { rows: stored } = await sql<{ agent_id: string; list: string }>`
    SELECT agent_id, string_agg(similar_id::text || ${US} || round(similarity * 1e6)::bigint || ${US} || method || ${US} || array_to_string(shared, ${US}), ${RS} ORDER BY rank) AS list
    FROM agent_similar WHERE agent_id = ANY(${ids}::uuid[]) GROUP BY agent_id`.execute(db);
  const storedOf = new Map(stored.map((r) => [r.agent_id, r.list]));
  const lineOf = (list: SimilarAgent[]) =>
    list.map((s) => [s.agentId, Math.round(s.similarity * 1e6), s.method, s.shared.join(US)].join(US)).join(RS);
  const changed = ids.filter((id) => (storedOf.get(id) ?? '') !== lineOf(lists.get(id)!));
  if (changed.length) {
    const rows = changed.flatMap((id) =>
      lists.get(id)!.map((s, i) => ({
        agent_id: id,
        similar_id: s.agentId,
        rank: i + 1,
        similarity: s.similarity,
        method: s.method,
        shared: s.shared,
      })),
    );
    await db.transaction().execute(async (trx) => {
      // An event's one-agent job and a batch can rewrite the same list at once: the second waits
      // (locks taken in id order, so two batches never deadlock) instead of failing on the key.
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(id::text, 8004)) FROM unnest(${[...changed].sort()}::uuid[]) id ORDER BY id`.execute(
        trx,
      );
      await trx.deleteFrom('agent_similar').where('agent_id', 'in', changed).execute();
      if (rows.length) await trx.insertInto('agent_similar').values(rows).execute();
    });
  }
  return lists;
}
