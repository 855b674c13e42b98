import pg from 'pg';

/** A statement as the driver sent it. */
export interface SentStatement {
  text: string;
  values: unknown[];
}

/** A scan of one table in a plan as run: its kind, index, and rows returned, dropped and fetched from the table, over all its loops. */
export interface TableScan {
  type: string;
  index?: string;
  rows: number;
  removed: number;
  heapFetches: number;
}

/** `fn`'s result and the statements it sent whose text includes `marker`. */
export async function captureStatements<T>(
  marker: string,
  fn: () => Promise<T>,
): Promise<{ result: T; statements: SentStatement[] }> {
  const statements: SentStatement[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, text: unknown, values?: unknown, ...rest: unknown[]) {
    if (typeof text === 'string' && text.includes(marker))
      statements.push({ text, values: (values as unknown[]) ?? [] });
    return (query as (...args: unknown[]) => unknown).call(this, text, values, ...rest);
  } as typeof query;
  try {
    return { result: await fn(), statements };
  } finally {
    pg.Client.prototype.query = query;
  }
}

/** The scans of `table` that `statement` makes, from `EXPLAIN ANALYZE` of it. */
export async function tableScans(pool: pg.Pool, statement: SentStatement, table: string): Promise<TableScan[]> {
  const { rows } = await pool.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
    statement.values,
  );
  const scans: TableScan[] = [];
  const walk = (node: Record<string, unknown>) => {
    // EXPLAIN states rows per loop.
    const loops = Number(node['Actual Loops']);
    if (node['Relation Name'] === table)
      scans.push({
        type: String(node['Node Type']),
        index: node['Index Name'] as string | undefined,
        rows: Number(node['Actual Rows']) * loops,
        removed:
          (Number(node['Rows Removed by Filter'] ?? 0) + Number(node['Rows Removed by Index Recheck'] ?? 0)) * loops,
        heapFetches: Number(node['Heap Fetches'] ?? 0),
      });
    for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
  };
  walk((rows[0]!['QUERY PLAN'] as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
  return scans;
}
