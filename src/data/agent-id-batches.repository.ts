import type { Executor } from './db.js';

/**
 * Every agent id, ascending, cut into pages of `pageSize` (the last one shorter), in one
 * statement: a million agents are a few thousand pages, read at once.
 */
export async function readAgentIdBatches(db: Executor, pageSize: number): Promise<string[][]> {
  const rows = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('agents')
        .select((eb) => {
          const rowNumber = eb.fn.agg<number>('row_number').over((ob) => ob.orderBy('id'));
          return ['id', eb(eb.parens(rowNumber, '-', eb.lit(1)), '/', pageSize).as('page')];
        })
        .as('numbered'),
    )
    .select((eb) => eb.fn.agg<string[]>('array_agg', ['id']).orderBy('id').as('ids'))
    .groupBy('page')
    .orderBy('page')
    .execute();
  return rows.map((r) => r.ids);
}
