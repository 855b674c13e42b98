import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { PROJECTIONS } from '../../src/data/projections.repository.js';
import { eventually } from '../../test/support/service.js';
import type { TestDatabase } from '../../test/support/database.js';

/**
 * A marketplace bench/generate.ts filled, as the topology takes a database: the caller's, so
 * stopping the topology keeps it (generating it again takes minutes).
 */
export function keptDatabase(url: string): TestDatabase {
  return { url, name: new URL(url).pathname.slice(1), drop: async () => undefined };
}

/**
 * The periodic batch jobs' schedules set to a minute that never comes in a bench's run (the
 * population statistics every 15 minutes, the daily recompute), so the minutes measured share the
 * machine only with what the bench asks for.
 */
export const BATCH_JOBS_HELD = { POPULATION_CRON: '0 0 1 1 *', RECOMPUTE_CRON: '0 0 1 1 *' } as const;

/**
 * The public origin the documents of a generated marketplace link to: one that stays the same from
 * run to run. A topology's default is its first API's port, new at every start, so each run found
 * every Bazaar listing and skills-index shard changed and rendered the whole catalogue again (the
 * 620,000 listings of the 100k marketplace) during the minutes it measured.
 */
export const GENERATED_PUBLIC_BASE_URL = { PUBLIC_BASE_URL: 'https://market.example' } as const;

/**
 * A process's peak resident set (VmHWM, MiB), from /proc; NaN once the process has exited (a role
 * that ran out of heap is gone).
 */
export function peakRssMiB(pid: number | undefined): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return Number.NaN;
  }
}

/**
 * Waits until the Bazaar's listings are rendered for the services' origin and renderer, so a
 * bench's measured minutes do not include rendering the catalogue's listings again: no rebuild
 * under way, and the index's state unchanged over five reads a second apart (the projector marks
 * a rebuild only once its first page is in).
 */
export async function listingsSettled(db: pg.Client, timeoutMs = 3_600_000): Promise<void> {
  let last = '';
  let still = 0;
  await eventually(
    async () => {
      const { rows } = await db.query<{ state: string; rebuilding: boolean }>(
        "SELECT coalesce(rendered_for, '') || ':' || version AS state, rebuilding_for IS NOT NULL AS rebuilding FROM bazaar_index_state",
      );
      const now = rows.map((r) => (r.rebuilding ? 'rebuilding' : r.state)).join();
      still = now === last && !now.includes('rebuilding') ? still + 1 : 0;
      last = now;
      return still >= 5;
    },
    timeoutMs,
    1000,
  );
}

/**
 * What autovacuum would have done after the catch-up: the catch-up fills tables the generator
 * left empty or small (the Bazaar's listings, the published documents, the receipts), and
 * autovacuum is off on the team's machines. On the statistics of an empty table the planner read
 * all 620,000 listings for every batch of changed sellers (0.5-0.6 s each), and that alone was the
 * largest share of the database's time in a 100k recompute. Returns the seconds it took.
 */
export async function vacuumAnalyze(db: pg.Client): Promise<number> {
  const started = performance.now();
  await db.query('VACUUM (ANALYZE)');
  return (performance.now() - started) / 1000;
}

/**
 * Holds the projections (the feeds, the Bazaar's listings, the skill documents and the skills
 * index they queue) for as long as `db`'s session lasts: each pass of theirs takes its advisory
 * lock or skips, and this session takes them all. For a marketplace never published, whose first
 * publish of the listings and shards is one-time work of hours at 300k agents: a bench that
 * measures the agents' documents then need not wait for it, nor share the machine with it.
 */
export async function holdProjections(db: pg.Client): Promise<void> {
  for (const key of Object.values(PROJECTIONS)) await db.query('SELECT pg_advisory_lock($1)', [key]);
}
