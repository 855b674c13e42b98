import { sql } from 'kysely';
import type { Executor } from './db.js';

/**
 * Every agent id, ascending, cut into pages of `pageSize` (the last one shorter), in one
 * statement: a million agents are a few thousand pages, read at once.
 */
export async function readAgentIdPages(db: Executor, pageSize: number): Promise<string[][]> {
  const { rows } = await sql<{ ids: string[] }>`
    SELECT array_agg(id ORDER BY id) AS ids
    FROM (SELECT id, (row_number() OVER (ORDER BY id) - 1) / ${pageSize} AS page FROM agents) numbered
    GROUP BY page ORDER BY page`.execute(db);
  return rows.map((r) => r.ids);
}
