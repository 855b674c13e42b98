import { sql } from 'kysely';
import type { Executor } from './db.js';

/** Records that a full recompute run's similar page (named by its first agent) is done; a retry records nothing twice. */
export async function recordSimilarPageDone(db: Executor, run: string, firstAgent: string): Promise<void> {
  await db
    .insertInto('recompute_pages')
    .values({ run, first_agent: firstAgent })
    .onConflict((oc) => oc.columns(['run', 'first_agent']).doNothing())
    .execute();
}

/** How many similar pages of `run` are done. */
export async function countSimilarPagesDone(db: Executor, run: string): Promise<number> {
  const row = await db
    .selectFrom('recompute_pages')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('run', '=', run)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Forgets the pages of runs done more than `days` ago. */
export async function forgetOldRecomputeRuns(db: Executor, days: number): Promise<void> {
  await db
    .deleteFrom('recompute_pages')
    .where('done_at', '<', sql<Date>`now() - make_interval(days => ${days})`)
    .execute();
}
