import { sql } from 'kysely';
import type { Db, Executor } from './db.js';

/** One agent's stored signature: its features and their idf weights, in no particular order. */
export type StoredSignature = { agentId: string; features: string[]; weights: number[] };
/** An agent holding a feature, and its weight there. */
export type StoredPosting = { feature: string; agentId: string; weight: number };

/** Name of the population_stats row whose computed_at says when every signature was last rebuilt. */
export const SIGNATURES_STAT = 'signatures';

type SignatureQueryRow = { agent_id: string; features: string[]; weights: number[] };
const toSignature = (r: SignatureQueryRow): StoredSignature => ({
  agentId: r.agent_id,
  features: r.features,
  weights: r.weights.map(Number),
});

/** The current signatures of `ids` (agents without features have none). */
export async function readSignatures(db: Executor, ids: string[]): Promise<StoredSignature[]> {
  if (!ids.length) return [];
  const { rows } = await sql<SignatureQueryRow>`
    SELECT agent_id, array_agg(feature) AS features, array_agg(weight) AS weights
    FROM agent_signature WHERE agent_id = ANY(${ids}::uuid[]) GROUP BY agent_id`.execute(db);
  return rows.map(toSignature);
}

/**
 * For each (agent, feature) pair, the feature's window: up to `cap` of the agents holding it
 * that follow the agent in id order, wrapping around to the first ones, the agent excluded. One
 * statement for every pair.
 */
export async function readFeatureWindows(
  db: Executor,
  pairs: Array<{ agentId: string; feature: string }>,
  cap: number,
): Promise<StoredPosting[]> {
  if (!pairs.length) return [];
  const { rows } = await sql<{ feature: string; agent_id: string; weight: number }>`
    SELECT q.feature, p.agent_id, p.weight
    FROM unnest(${pairs.map((p) => p.agentId)}::uuid[], ${pairs.map((p) => p.feature)}::text[]) q(me, feature)
    CROSS JOIN LATERAL (
      SELECT * FROM (
        (SELECT s.agent_id, s.weight FROM agent_signature s WHERE s.feature = q.feature AND s.agent_id > q.me ORDER BY s.agent_id LIMIT ${cap})
        UNION ALL
        (SELECT s.agent_id, s.weight FROM agent_signature s WHERE s.feature = q.feature AND s.agent_id < q.me ORDER BY s.agent_id LIMIT ${cap})) w
      LIMIT ${cap}) p`.execute(db);
  return rows.map((r) => ({ feature: r.feature, agentId: r.agent_id, weight: Number(r.weight) }));
}

/** Agents read per statement when reading every signature. */
const SIGNATURE_PAGE = 5000;

/**
 * Every signature in ascending agent id order, handed to `visit` page by page (5,000 agents a
 * statement, along the (agent_id, feature) index), all read in one read-only repeatable-read
 * transaction: a rebuild committing meanwhile cannot mix two versions. A page's rows are not
 * kept, so a caller that stores them compactly never holds them all as objects.
 */
export async function readEverySignature(db: Db, visit: (page: StoredSignature[]) => void): Promise<void> {
  await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      await sql`SET TRANSACTION READ ONLY`.execute(trx);
      let after = '00000000-0000-0000-0000-000000000000';
      for (;;) {
        const { rows } = await sql<SignatureQueryRow>`
          SELECT agent_id, array_agg(feature) AS features, array_agg(weight) AS weights
          FROM agent_signature WHERE agent_id > ${after}::uuid
          GROUP BY agent_id ORDER BY agent_id LIMIT ${SIGNATURE_PAGE}`.execute(trx);
        visit(rows.map(toSignature));
        const last = rows.at(-1);
        if (rows.length < SIGNATURE_PAGE || last === undefined) break;
        after = last.agent_id;
      }
    });
}

/** When every signature was last rebuilt (`stampSignatureRebuild`), or undefined if never. */
export async function readSignatureRebuildTime(db: Executor): Promise<Date | undefined> {
  const row = await db
    .selectFrom('population_stats')
    .select('computed_at')
    .where('name', '=', SIGNATURES_STAT)
    .executeTakeFirst();
  return row ? new Date(row.computed_at) : undefined;
}

/** Records that every signature was just rebuilt (`count` signature entries): workers reload their snapshot. */
export async function stampSignatureRebuild(db: Executor, count: number): Promise<void> {
  await sql`
    INSERT INTO population_stats (name, breakpoints, population) VALUES (${SIGNATURES_STAT}, '{}', ${count})
    ON CONFLICT (name) DO UPDATE SET population = excluded.population, computed_at = clock_timestamp()`.execute(db);
}
