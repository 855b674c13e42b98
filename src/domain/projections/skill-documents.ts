import type { Db } from '../../data/db.js';
import {
  beginProjectionPass,
  endProjectionPass,
  readChangedSkills,
  type ChangedSkills,
} from '../../data/projections.repository.js';
import { addPlannedJobs, type PlannedJob, type Queues } from '../../platform/queues.js';

/** How long changes to the skills are gathered before the skills index is published again with them. */
export const SKILLS_INDEX_COALESCE_MS = 250;
/** How long the sales of one skill gather before its page is published again with them. */
export const SKILL_PAGE_SALES_COALESCE_MS = 5_000;

/** The job id of the window `now` falls in, and the delay that runs it just after the window closes. */
function windowOf(now: number, ms: number) {
  const window = Math.floor(now / ms);
  return { window, delay: (window + 1) * ms - now + 20 };
}

/**
 * The publishes a range of skill changes asks for. `pass` names the range (its upper bound), so
 * each pass's jobs are new ones: an earlier job with the same skill, still kept by the queue,
 * never swallows a later change.
 * - A skill changed itself (a field, its status, a version added or signed, its seller's handle):
 *   its manifest and page at once, and the skills index after the 250 ms window it falls in, so
 *   a burst of changes is one publish of the index.
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
  if (skills.changed.length) {
    const { window, delay } = windowOf(now, SKILLS_INDEX_COALESCE_MS);
    jobs.push({ queue: 'documents', name: 'skills-index', data: {}, jobId: `skills-index-${window}`, delay });
  }
  const sales = windowOf(now, SKILL_PAGE_SALES_COALESCE_MS);
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
 * One pass of the skill documents projection: asks for the publishes the skills changed or sold
 * since its watermark call for (skillDocumentJobs), then moves the watermark. No transaction is
 * open while Redis is called: the range is read under the projection's lock, the jobs are added,
 * and the watermark is moved in a second transaction, never backwards. Two passes that overlap
 * add the same jobs, which the queue drops. If Redis refuses, the error is thrown and the
 * watermark stays, so the next pass asks again. Returns how many skills the pass took up, or
 * null when another pass held the lock.
 */
export async function projectSkillDocuments(db: Db, queues: Queues, now = Date.now()): Promise<number | null> {
  const taken = await db.transaction().execute(async (trx) => {
    const range = await beginProjectionPass(trx, 'skill-documents');
    return range && { range, skills: await readChangedSkills(trx, range) };
  });
  if (!taken) return null;
  const { range, skills } = taken;
  if (range.from === range.to) return 0;
  await addPlannedJobs(queues, skillDocumentJobs(skills, range.to, now));
  await db.transaction().execute((trx) => endProjectionPass(trx, 'skill-documents', range));
  return skills.changed.length + skills.sold.length;
}
