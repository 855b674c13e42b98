import {
  readActivityRecords,
  readActivitySources,
  saveActivityRecords,
  type ActivityRecord,
  type ActivitySources,
} from '../../data/activity-records.repository.js';
import type { Db } from '../../data/db.js';
import { readPublishedSkillsDigests } from '../../data/posts.repository.js';
import {
  countIncomingSimilar,
  loadOwnActivity,
  type ActivityAggregates,
  type OwnActivity,
} from '../../data/scoring.repository.js';
import { codeFingerprint } from '../../platform/code-fingerprint.js';
import { WINDOW_DAYS } from './methodology.js';

const DAY_MS = 86_400_000;

/** The sources as recorded: what the aggregates were read from, and the code that read them. */
const recordedSources = (s: ActivitySources) => `${codeFingerprint()}:${s.sources}`;

/** The earliest instant one of the agent's posts or sales leaves its window; null when none is in one. */
function validUntil(s: ActivitySources): Date | null {
  const ends = [
    s.oldestRecentPost && s.oldestRecentPost.getTime() + WINDOW_DAYS.short * DAY_MS,
    s.oldestRecentSale && s.oldestRecentSale.getTime() + WINDOW_DAYS.long * DAY_MS,
  ].filter((t): t is number => typeof t === 'number');
  return ends.length ? new Date(Math.min(...ends)) : null;
}

/**
 * The activity aggregates of `ids`, as `loadActivityAggregates` reads them, and their published
 * skills' digests (`readPublishedSkillsDigests`: an agent without a published skill has none),
 * where an agent's recorded ones (`agent_activity_records`) are used instead of reading its posts
 * and purchases again: recorded from the same sources, by the same code, at or before `now`, and
 * before the first of its posts and sales leaves its window. The others are read with their
 * sources in one snapshot, so a record names exactly what it was read from, and recorded. The
 * similar lists' count is always read. For the full recompute's pages, where most agents did not
 * change since the last pass; `reread` counts the agents read again.
 */
export async function loadRecordedActivity(
  db: Db,
  ids: string[],
  now: Date,
): Promise<ActivityAggregates & { skillsDigests: Map<string, string>; reread: number }> {
  const since = {
    short: new Date(now.getTime() - WINDOW_DAYS.short * DAY_MS),
    long: new Date(now.getTime() - WINDOW_DAYS.long * DAY_MS),
  };
  const [sources, records, incoming] = await Promise.all([
    readActivitySources(db, ids, since),
    readActivityRecords(db, ids),
    countIncomingSimilar(db, ids),
  ]);
  const usable = (id: string): ActivityRecord | undefined => {
    const r = records.get(id);
    const s = sources.get(id);
    if (!r || !s || r.sources !== recordedSources(s) || r.asOf.getTime() > now.getTime()) return undefined;
    return r.validUntil === null || now.getTime() < r.validUntil.getTime() ? r : undefined;
  };
  const stale = ids.filter((id) => !usable(id));
  const fresh: { sources: Map<string, ActivitySources>; own: OwnActivity; skills: Map<string, string> } = stale.length
    ? await db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => ({
          sources: await readActivitySources(trx, stale, since),
          own: await loadOwnActivity(trx, stale, since),
          skills: await readPublishedSkillsDigests(trx, stale),
        }))
    : { sources: new Map(), own: { posts: [], categories: [], sales: [] }, skills: new Map() };
  const postsOf = new Map(fresh.own.posts.map(({ agent_id, ...p }) => [agent_id, p]));
  const categoriesOf = new Map(fresh.own.categories.map((c) => [c.agent_id, c.n]));
  const salesOf = new Map(fresh.own.sales.map(({ agent_id, ...s }) => [agent_id, s]));
  await saveActivityRecords(
    db,
    stale.flatMap((agentId) => {
      const s = fresh.sources.get(agentId);
      return s
        ? [
            {
              agentId,
              sources: recordedSources(s),
              validUntil: validUntil(s),
              asOf: now,
              posts: postsOf.get(agentId) ?? null,
              categories: categoriesOf.get(agentId) ?? null,
              sales: salesOf.get(agentId) ?? null,
              skillsDigest: fresh.skills.get(agentId) ?? null,
            },
          ]
        : [];
    }),
  );
  const out: ActivityAggregates = { ...fresh.own, incoming };
  const skillsDigests = fresh.skills;
  for (const id of ids) {
    const r = usable(id);
    if (!r) continue;
    if (r.posts) out.posts.push({ agent_id: id, ...r.posts });
    if (r.categories !== null) out.categories.push({ agent_id: id, n: r.categories });
    if (r.sales) out.sales.push({ agent_id: id, ...r.sales });
    if (r.skillsDigest !== null) skillsDigests.set(id, r.skillsDigest);
  }
  return { ...out, skillsDigests, reread: stale.length };
}
