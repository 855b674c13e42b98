import type { Db } from '../../data/db.js';
import {
  beginProjectionPass,
  CHANGE_BATCH,
  readChangeBatch,
  readCursor,
  saveCursor,
  type ChangePosition,
} from '../../data/projections.repository.js';
import { shardOf } from '../../documents/skills/skills-index.renderer.js';
import { addPlannedJobs, coalescingWindow, type PlannedJob, type Queues } from '../../platform/queues.js';

/** How long changes to the skills are gathered before the shards that list them are published again. */
export const SKILLS_INDEX_COALESCE_MS = 250;
/**
 * How long they are gathered before the index itself (the most bought skills, the count of every
 * published skill) is published again.
 */
export const SKILLS_INDEX_TOP_COALESCE_MS = 2_000;
/** How long sales are gathered before the index is published again with its most bought skills. */
export const SKILLS_INDEX_SALES_COALESCE_MS = 5_000;
/** How long the sales of one skill gather before its page is published again with them. */
export const SKILL_PAGE_SALES_COALESCE_MS = 5_000;

/** The skills whose documents a batch of changes touches. */
export interface ChangedSkills {
  /** Skills changed themselves: a field, their status, a version added or signed, their seller's handle. */
  changed: string[];
  /** Skills sold (a purchase written): their sales and buyers moved. */
  sold: string[];
}

/**
 * The publishes a range of skill changes asks for. `pass` names the range (its upper bound), so
 * each pass's jobs are new ones: an earlier job with the same skill, still kept by the queue,
 * never swallows a later change.
 * - A skill changed itself (a field, its status, a version added or signed, its seller's handle):
 *   its manifest and page at once; the shard of the skills index that lists it after the 250 ms
 *   window it falls in, and the index itself after its 2 s window, so a burst of changes is one
 *   publish of each.
 * - A skill only sold: its page after the 5 s window of its sales. People read the page; a count
 *   a few seconds behind costs them nothing, while a publish per sale (its manifest re-rendered and
 *   re-digested) would take the API process's time on the paid path when a worker shares it.
 */
export function skillDocumentJobs(skills: ChangedSkills, pass: string, now: number): PlannedJob[] {
  const jobs: PlannedJob[] = skills.changed.map((postId) => ({
    queue: 'documents',
    name: 'post-manifest',
    data: { postId },
    jobId: `post-manifest-${postId}-${pass}`,
  }));
  if (skills.sold.length && !skills.changed.length) {
    // Sales move the index's most bought skills: the index again, at most once in 5 s for them.
    const top = coalescingWindow(now, SKILLS_INDEX_SALES_COALESCE_MS);
    jobs.push({
      queue: 'documents',
      name: 'skills-index',
      data: {},
      jobId: `skills-index-sales-${top.window}`,
      delay: top.delay,
    });
  }
  if (skills.changed.length) {
    const { window, delay } = coalescingWindow(now, SKILLS_INDEX_COALESCE_MS);
    for (const shard of new Set(skills.changed.map(shardOf)))
      jobs.push({
        queue: 'documents',
        name: 'skills-index',
        data: { shard },
        jobId: `skills-index-${shard}-${window}`,
        delay,
      });
    const top = coalescingWindow(now, SKILLS_INDEX_TOP_COALESCE_MS);
    jobs.push({
      queue: 'documents',
      name: 'skills-index',
      data: {},
      jobId: `skills-index-${top.window}`,
      delay: top.delay,
    });
  }
  const sales = coalescingWindow(now, SKILL_PAGE_SALES_COALESCE_MS);
  for (const postId of skills.sold)
    jobs.push({
      queue: 'documents',
      name: 'post-manifest',
      data: { postId },
      jobId: `post-manifest-${postId}-sales-${sales.window}`,
      delay: sales.delay,
    });
  return jobs;
}

/**
 * One pass of the skill documents projection (docs/projections.md): one batch of the skills
 * changed and one of the purchases written since its cursors; asks for the publishes they call for
 * (skillDocumentJobs), then moves the cursors. No transaction is open while Redis is called: the
 * batches are read under the projection's lock, the jobs are added, and the cursors are moved in
 * a second transaction, never backwards. Two passes that overlap add the same jobs, which the
 * queue drops. If Redis refuses, the error is thrown and the cursors stay, so the next pass asks
 * again. Returns how many skills the pass took up and whether more changes wait, or null when
 * another pass held the lock.
 */
export async function projectSkillDocuments(
  db: Db,
  queues: Queues,
  clock: () => number = Date.now,
  limit = CHANGE_BATCH,
): Promise<{ skills: number; more: boolean } | null> {
  const taken = await db.transaction().execute(async (trx) => {
    const horizon = await beginProjectionPass(trx, 'skill-documents');
    if (horizon === undefined) return undefined;
    const posts = await readChangeBatch(trx, 'posts', await readCursor(trx, 'skill-documents'), horizon, limit);
    const sales = await readChangeBatch(
      trx,
      'purchases',
      await readCursor(trx, 'skill-documents:sales'),
      horizon,
      limit,
    );
    return { horizon, posts, sales };
  });
  if (!taken) return null;
  const { horizon, posts, sales } = taken;
  // The time is read after the batches were: a job of the window it names runs later still, so it
  // reads every change the batches saw. Read before them, a slow pass could name a window whose
  // job had already started, and BullMQ would drop the add as a repeat.
  const now = clock();
  const skills: ChangedSkills = { changed: posts.ids, sold: sales.postIds.filter((id) => !posts.ids.includes(id)) };
  // Named by where the batches end, so each pass's jobs are new ones.
  const pass = (p: ChangePosition) => (p.txid === horizon ? p.txid : `${p.txid}-${p.id}`);
  if (skills.changed.length || skills.sold.length)
    await addPlannedJobs(queues, skillDocumentJobs(skills, `${pass(posts.reached)}`, now));
  await db.transaction().execute(async (trx) => {
    await saveCursor(trx, 'skill-documents', posts.reached);
    await saveCursor(trx, 'skill-documents:sales', sales.reached);
  });
  return { skills: skills.changed.length + skills.sold.length, more: posts.more || sales.more };
}
