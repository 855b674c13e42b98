import { sql } from 'kysely';
import type { Db, Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';
import type { AgentSimilarTable } from './schema.js';

/** How an entry of a similar list was found. */
export type SimilarityMethod = AgentSimilarTable['method'];
/** One entry of an agent's stored similar list, in rank order. */
export type SimilarEntry = { agentId: string; similarity: number; method: SimilarityMethod; shared: string[] };
/** A similar agent by buyer overlap, for agent `of`. */
export type BuyerOverlap = { of: string; agentId: string; handle: string; similarity: number };

/** The handles of the agents among `ids` that exist (agents deleted since are left out). */
export async function readHandles(db: Executor, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await db
    .selectFrom('agents')
    .select(['id', 'handle'])
    .where(sql<boolean>`id = ANY(${ids}::uuid[])`)
    .execute();
  return new Map(rows.map((a) => [a.id, a.handle]));
}

/**
 * For each of `agentIds`, its `limit` most similar sellers by buyer overlap: the Jaccard index of
 * their sets of buyer wallets (a seller's own wallet is not its buyer), over the `maxCandidates`
 * sellers sharing most buyers with it; best first, equal similarities by handle.
 */
export async function readBuyerOverlap(
  db: Executor,
  agentIds: string[],
  maxCandidates: number,
  limit: number,
): Promise<BuyerOverlap[]> {
  if (!agentIds.length) return [];
  const { rows } = await sql<{ me: string; agent_id: string; handle: string; sim: number }>`
    WITH mine AS (SELECT DISTINCT seller_id AS me, buyer_address AS b FROM purchases WHERE seller_id = ANY(${agentIds}::uuid[]) AND ${notOwnPurchase()}),
    my_size AS (SELECT me, count(*)::float8 AS n FROM mine GROUP BY me),
    overlap AS (
      SELECT m.me, p.seller_id, count(DISTINCT p.buyer_address)::float8 AS i
      FROM mine m JOIN purchases p ON p.buyer_address = m.b AND p.seller_id <> m.me AND ${notOwnPurchase('p')}
      GROUP BY m.me, p.seller_id),
    cand AS (
      SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY me ORDER BY i DESC, seller_id) AS r FROM overlap) o
      WHERE r <= ${maxCandidates}),
    sizes AS (
      SELECT seller_id, count(DISTINCT buyer_address)::float8 AS n FROM purchases
      WHERE seller_id IN (SELECT seller_id FROM cand) AND ${notOwnPurchase()} GROUP BY seller_id),
    ranked AS (
      SELECT c.me, c.seller_id AS agent_id, a.handle, c.i / (s.n + ms.n - c.i) AS sim,
             row_number() OVER (PARTITION BY c.me ORDER BY c.i / (s.n + ms.n - c.i) DESC, a.handle) AS rank
      FROM cand c JOIN sizes s USING (seller_id) JOIN my_size ms ON ms.me = c.me JOIN agents a ON a.id = c.seller_id)
    SELECT me, agent_id, handle, sim FROM ranked WHERE rank <= ${limit} ORDER BY me, rank`.execute(db);
  return rows.map((r) => ({ of: r.me, agentId: r.agent_id, handle: r.handle, similarity: Number(r.sim) }));
}

/** Separators of a stored list read as text: unit (between fields) and record (between entries). */
const US = '\u001f';
const RS = '\u001e';

/**
 * A similar list as one line of text, as `readStoredListLines` reads the stored one: equal lines
 * are equal lists (similarities compared to the millionth, as stored).
 */
export function similarListLine(list: SimilarEntry[]): string {
  return list.map((s) => [s.agentId, Math.round(s.similarity * 1e6), s.method, s.shared.join(US)].join(US)).join(RS);
}

/**
 * The stored similar list of each of `agentIds` that has one, as one line of text
 * (`similarListLine`): an array column per entry cost more to parse than the rest of the read.
 */
export async function readStoredListLines(db: Executor, agentIds: string[]): Promise<Map<string, string>> {
  if (!agentIds.length) return new Map();
  const { rows } = await sql<{ agent_id: string; list: string }>`
    SELECT agent_id, string_agg(similar_id::text || ${US} || round(similarity * 1e6)::bigint || ${US} || method || ${US} || array_to_string(shared, ${US}), ${RS} ORDER BY rank) AS list
    FROM agent_similar WHERE agent_id = ANY(${agentIds}::uuid[]) GROUP BY agent_id`.execute(db);
  return new Map(rows.map((r) => [r.agent_id, r.list]));
}

/** Replaces the stored similar list of each agent given (an empty list removes it), in one transaction. */
export async function replaceSimilarLists(db: Db, lists: Map<string, SimilarEntry[]>): Promise<void> {
  if (!lists.size) return;
  const ids = [...lists.keys()].sort();
  const rows = [...lists].flatMap(([agentId, list]) =>
    list.map((s, i) => ({
      agent_id: agentId,
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
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(id::text, 8004)) FROM unnest(${ids}::uuid[]) id ORDER BY id`.execute(
      trx,
    );
    await trx.deleteFrom('agent_similar').where('agent_id', 'in', ids).execute();
    if (rows.length) await trx.insertInto('agent_similar').values(rows).execute();
  });
}
