import { sql } from 'kysely';
import type { Db, Executor } from './db.js';
import type { AgentSimilarTable } from './schema.js';

/** How an entry of a similar list was found. */
export type SimilarityMethod = AgentSimilarTable['method'];
/** One entry of an agent's stored similar list, in rank order. */
export type SimilarEntry = { agentId: string; similarity: number; method: SimilarityMethod; shared: string[] };

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

/** How an entry reads in a stored list's line: as `similarListLine` writes it, or as the documents show it (with its handle). */
const ENTRY_AS_RANKED = sql`s.similar_id::text || ${US} || round(s.similarity * 1e6)::bigint || ${US} || s.method || ${US} || array_to_string(s.shared, ${US})`;
const ENTRY_AS_SHOWN = sql`s.similar_id::text || ${US} || s.similar_handle || ${US} || s.similarity::text || ${US} || s.method || ${US} || array_to_string(s.shared, ${US})`;

/**
 * Each of `agentIds` (`a.id`) with its stored similar list as one line of text of `entry`s
 * (`l.line`, null without one). Looked up agent by agent: planned from agent_similar's
 * statistics, which the full recompute's first pass fills after the last ANALYZE, `= ANY` scanned
 * the whole table.
 */
const storedListLines = (agentIds: string[], entry: typeof ENTRY_AS_SHOWN) => sql`
  unnest(${agentIds}::uuid[]) a(id) CROSS JOIN LATERAL (
    SELECT string_agg(${entry}, ${RS} ORDER BY s.rank) AS line FROM agent_similar s WHERE s.agent_id = a.id) l`;

/**
 * The stored similar list of each of `agentIds` that has one, as one line of text
 * (`similarListLine`): an array column per entry cost more to parse than the rest of the read.
 */
export async function readStoredListLines(db: Executor, agentIds: string[]): Promise<Map<string, string>> {
  if (!agentIds.length) return new Map();
  const { rows } = await sql<{ agent_id: string; line: string | null }>`
    SELECT a.id AS agent_id, l.line FROM ${storedListLines(agentIds, ENTRY_AS_RANKED)}`.execute(db);
  return new Map(rows.flatMap((r) => (r.line === null ? [] : [[r.agent_id, r.line]])));
}

/**
 * The digest of each stored similar list of `agentIds` (an agent without a list is absent): equal
 * digests are equal lists as their documents show them, handles included (a rename rewrites the
 * lists holding the agent, migration 0055), so a page decides whom to leave alone without reading
 * the lists.
 */
export async function readSimilarListDigests(db: Executor, agentIds: string[]): Promise<Map<string, string>> {
  if (!agentIds.length) return new Map();
  const { rows } = await sql<{ agent_id: string; digest: string | null }>`
    SELECT a.id AS agent_id, md5(l.line) AS digest FROM ${storedListLines(agentIds, ENTRY_AS_SHOWN)}`.execute(db);
  return new Map(rows.flatMap((r) => (r.digest === null ? [] : [[r.agent_id, r.digest]])));
}

/**
 * The stored similar lists of `agentIds`, best first, each entry with its agent's handle, and each
 * list's digest as `readSimilarListDigests` reads it (an agent without a list is absent). Read as
 * one line of text an agent: the shared features as an array column per entry cost more to parse
 * than the rest of a full recompute page's reads.
 */
export async function readSimilarLists(
  db: Executor,
  agentIds: string[],
): Promise<Map<string, { list: Array<SimilarEntry & { handle: string }>; digest: string }>> {
  if (!agentIds.length) return new Map();
  const { rows } = await sql<{ agent_id: string; line: string | null; digest: string | null }>`
    SELECT a.id AS agent_id, l.line, md5(l.line) AS digest FROM ${storedListLines(agentIds, ENTRY_AS_SHOWN)}`.execute(
    db,
  );
  return new Map(
    rows.flatMap(({ agent_id, line, digest }) =>
      line === null || digest === null
        ? []
        : [
            [
              agent_id,
              {
                digest,
                list: line.split(RS).map((entry) => {
                  const [agentId = '', handle = '', similarity = '0', method, ...shared] = entry.split(US);
                  return {
                    agentId,
                    handle,
                    similarity: Number(similarity),
                    method: method as SimilarityMethod,
                    // An empty array reads as one empty field.
                    shared: shared.length === 1 && shared[0] === '' ? [] : shared,
                  };
                }),
              },
            ],
          ],
    ),
  );
}

/**
 * Replaces the stored similar list of each agent given (an empty list removes it), in one
 * transaction, and forgets what those lists were ranked from (`markListsRankedFrom` records it
 * again for the lists a snapshot ranked).
 */
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
      // Written by the entry's trigger (migration 0055): the agent's handle as this transaction reads it.
      similar_handle: sql<string>`DEFAULT`,
    })),
  );
  await db.transaction().execute(async (trx) => {
    // An event's one-agent job and a batch can rewrite the same list at once: the second waits
    // (locks taken in id order, so two batches never deadlock) instead of failing on the key.
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(id::text, 8004)) FROM unnest(${ids}::uuid[]) id ORDER BY id`.execute(
      trx,
    );
    // The lists' agents and the agents they list are locked as the entries' foreign keys would
    // lock them, before any entry is deleted: a rename (which rewrites the entries holding the
    // agent) waits for this transaction or is waited for, and never waits on an entry this one
    // deleted while this one waits on the rename.
    const locked = [...new Set([...ids, ...rows.map((r) => r.similar_id)])].sort();
    await sql`SELECT 1 FROM agents WHERE id = ANY(${locked}::uuid[]) ORDER BY id FOR KEY SHARE`.execute(trx);
    await trx.deleteFrom('agent_similar').where('agent_id', 'in', ids).execute();
    await trx.deleteFrom('similar_list_sources').where('agent_id', 'in', ids).execute();
    if (rows.length) await trx.insertInto('agent_similar').values(rows).execute();
  });
}

/** Which of `agentIds` have their stored similar list recorded as ranked from `source`. */
export async function readListsRankedFrom(db: Executor, agentIds: string[], source: string): Promise<Set<string>> {
  if (!agentIds.length) return new Set();
  const rows = await db
    .selectFrom('similar_list_sources')
    .select('agent_id')
    .where('agent_id', 'in', agentIds)
    .where('ranked_from', '=', source)
    .execute();
  return new Set(rows.map((r) => r.agent_id));
}

/**
 * Records that the similar lists `ranked` (each agent's list as `similarListLine`) are what
 * ranking from `source` gives, for each agent whose stored list is still that list. Under the
 * lists' locks, as `replaceSimilarLists` takes them: a list another job wrote since this one was
 * ranked differs, and is not recorded.
 */
export async function markListsRankedFrom(db: Db, ranked: Map<string, string>, source: string): Promise<void> {
  if (!ranked.size) return;
  const ids = [...ranked.keys()].sort();
  await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(id::text, 8004)) FROM unnest(${ids}::uuid[]) id ORDER BY id`.execute(
      trx,
    );
    const stored = await readStoredListLines(trx, ids);
    const still = ids.filter((id) => (stored.get(id) ?? '') === ranked.get(id));
    if (!still.length) return;
    await sql`
      INSERT INTO similar_list_sources (agent_id, ranked_from)
      SELECT a.id, ${source} FROM unnest(${still}::uuid[]) u(id) JOIN agents a ON a.id = u.id
      ON CONFLICT (agent_id) DO UPDATE SET ranked_from = excluded.ranked_from
      WHERE similar_list_sources.ranked_from IS DISTINCT FROM excluded.ranked_from`.execute(trx);
  });
}
