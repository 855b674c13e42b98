import { sql } from 'kysely';
import type { Executor } from './db.js';

/**
 * Plans similar pages of a full recompute run (each named by its first agent), not done yet. A page
 * planned again by a retry of the run keeps what it had, unless it was planned over an hour ago:
 * then the run's label is being used again (completed jobs are kept at most an hour, so its job
 * runs again) and the page is undone until it does.
 */
export async function planSimilarPages(db: Executor, run: string, firstAgents: string[]): Promise<void> {
  if (!firstAgents.length) return;
  await db
    .insertInto('recompute_pages')
    .values(firstAgents.map((first_agent) => ({ run, first_agent })))
    .onConflict((oc) =>
      oc
        .columns(['run', 'first_agent'])
        .doUpdateSet({ planned_at: sql`now()`, done_at: null })
        .where('recompute_pages.planned_at', '<', sql<Date>`now() - interval '1 hour'`),
    )
    .execute();
}

/** Records a similar page of a run done (planned or not: a page's job may finish before its plan is written). */
export async function recordSimilarPageDone(db: Executor, run: string, firstAgent: string): Promise<void> {
  await db
    .insertInto('recompute_pages')
    .values({ run, first_agent: firstAgent, done_at: sql`now()` })
    .onConflict((oc) => oc.columns(['run', 'first_agent']).doUpdateSet({ done_at: sql`now()` }))
    .execute();
}

/** How many planned similar pages of `run` are not done. */
export async function countSimilarPagesLeft(db: Executor, run: string): Promise<number> {
  const row = await db
    .selectFrom('recompute_pages')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('run', '=', run)
    .where('done_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Forgets the pages of runs planned more than `days` ago. */
export async function forgetOldRecomputeRuns(db: Executor, days: number): Promise<void> {
  await db
    .deleteFrom('recompute_pages')
    .where('planned_at', '<', sql<Date>`now() - make_interval(days => ${days})`)
    .execute();
}
