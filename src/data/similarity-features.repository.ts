import { sql, type RawBuilder } from 'kysely';
import type { Db, Executor } from './db.js';

/**
 * Where an agent's features come from, named by family: the tags and OASF categories of its
 * published skills (`tag:pdf`, `skill:…`, `domain:…`) and its profile's OASF skills and domains.
 * `postsOf` narrows the posts (by author_id) and `agentsOf` the agents (by id). One list for the
 * one-agent refresh and the full rebuild, so both derive the same features.
 */
const featureSources = (postsOf: RawBuilder<unknown>, agentsOf: RawBuilder<unknown>) => sql`
  SELECT author_id AS agent_id, 'tag:' || t AS f FROM posts, unnest(tags) t WHERE status = 'published' AND ${postsOf}
  UNION ALL SELECT author_id, 'skill:' || x FROM posts, unnest(oasf_skills) x WHERE status = 'published' AND ${postsOf}
  UNION ALL SELECT author_id, 'domain:' || x FROM posts, unnest(oasf_domains) x WHERE status = 'published' AND ${postsOf}
  UNION ALL SELECT id, 'skill:' || x FROM agents, unnest(oasf_skills) x WHERE ${agentsOf}
  UNION ALL SELECT id, 'domain:' || x FROM agents, unnest(oasf_domains) x WHERE ${agentsOf}`;

/** N of the idf, as SQL: the agents with features, as last counted with the frequencies. */
const N_SQL = sql.raw(
  `greatest(coalesce((SELECT population FROM population_stats WHERE name = 'featureAgents'), 1), 1)::float8`,
);

/**
 * Signatures of the agents matching `filter` (on agent_features `f`): each agent's `size` rarest
 * features, weighted ln(1 + N/df), inserted in primary key order. Returns the entries written.
 */
async function insertSignatures(db: Executor, filter: RawBuilder<unknown>, size: number): Promise<number> {
  const result = await sql`
    INSERT INTO agent_signature (agent_id, feature, weight)
    SELECT agent_id, feature, ln(1 + ${N_SQL} / df) FROM (
      SELECT f.agent_id, f.feature, coalesce(d.df, 1) AS df,
             row_number() OVER (PARTITION BY f.agent_id ORDER BY coalesce(d.df, 1), f.feature) AS r
      FROM agent_features f LEFT JOIN feature_df d USING (feature) WHERE ${filter}) ranked
    WHERE r <= ${size}
    ORDER BY agent_id, feature`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Replaces one agent's features and its signature (its `signatureSize` rarest features) with
 * what its profile and published skills say now, in one transaction. Returns the signature's entries.
 */
export async function replaceAgentFeatures(db: Db, agentId: string, signatureSize: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx.deleteFrom('agent_features').where('agent_id', '=', agentId).execute();
    const sources = featureSources(sql`author_id = ${agentId}`, sql`id = ${agentId}`);
    await sql`
      INSERT INTO agent_features (agent_id, feature)
      SELECT DISTINCT ${agentId}::uuid, f FROM (${sources}) feats`.execute(trx);
    await trx.deleteFrom('agent_signature').where('agent_id', '=', agentId).execute();
    return insertSignatures(trx, sql`f.agent_id = ${agentId}`, signatureSize);
  });
}

/** Replaces every agent's features, in primary key order. */
export async function replaceEveryAgentFeatures(db: Db): Promise<void> {
  await replaceAll(db, 'agent_features', async (trx) => {
    await sql`
      INSERT INTO agent_features (agent_id, feature)
      SELECT DISTINCT agent_id, f FROM (${featureSources(sql`TRUE`, sql`TRUE`)}) feats
      ORDER BY 1, 2`.execute(trx);
  });
}

/** Replaces every agent's signature (its `size` rarest features). Returns the entries written. */
export async function replaceEverySignature(db: Db, size: number): Promise<number> {
  return replaceAll(db, 'agent_signature', (trx) => insertSignatures(trx, sql`TRUE`, size));
}

/**
 * Fresh planner statistics for the feature tables after they were replaced whole: without them
 * the planner would scan millions of rows for every similarity lookup (seen: 1.4 s per lookup
 * until autovacuum got to them). Signatures are vacuumed too, so the similarity reads are
 * index-only scans (the visibility map is set).
 */
export async function analyzeFeatureTables(db: Db): Promise<void> {
  await sql`VACUUM (ANALYZE) agent_signature`.execute(db);
  await sql`ANALYZE agent_features, feature_df`.execute(db);
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
  fill: (trx: Executor) => Promise<T>,
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
 * Recomputes every feature's document frequency (how many agents have it) and N, the agents with
 * features, in one transaction. Returns the features counted.
 */
export async function replaceFeatureFrequencies(db: Db): Promise<number> {
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
