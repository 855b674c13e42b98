import {
  readActivityRecords,
  readActivitySources,
  readSideSources,
  saveActivityRecords,
  type ActivityRecord,
} from '../../data/activity-records.repository.js';
import type { Db } from '../../data/db.js';
import { readPublishedSkillsDigests } from '../../data/posts.repository.js';
import {
  countIncomingSimilar,
  loadPostsActivity,
  loadSalesActivity,
  type ActivityAggregates,
} from '../../data/scoring.repository.js';
import { codeFingerprint } from '../../platform/code-fingerprint.js';
import { WINDOW_DAYS } from './methodology.js';

const DAY_MS = 86_400_000;

/** A record's sources as written: the code that read it, then each part's sources. */
const recordedSources = (posts: string, sales: string) => `${codeFingerprint()}:${posts}:${sales}`;

/** Each part's sources of a record read by this code; undefined when other code read it. */
function recordedParts(sources: string): { posts: string; sales: string } | undefined {
  const prefix = `${codeFingerprint()}:`;
  if (!sources.startsWith(prefix)) return undefined;
  const f = sources.slice(prefix.length).split(':');
  return f.length === 4 ? { posts: `${f[0]}:${f[1]}`, sales: `${f[2]}:${f[3]}` } : undefined;
}

/** The instant the oldest of a part's rows still in its window leaves it; null when none is in it. */
const leaves = (oldest: Date | null, days: number): Date | null => oldest && new Date(oldest.getTime() + days * DAY_MS);

/** What the posts' part of a record holds. */
type PostsPart = Pick<ActivityRecord, 'posts' | 'categories' | 'skillsDigest' | 'postsValidUntil'> & {
  sources: string;
};
/** What the sales' part of a record holds. */
type SalesPart = Pick<ActivityRecord, 'sales' | 'salesValidUntil'> & { sources: string };

/**
 * The activity aggregates of `ids`, as `loadActivityAggregates` reads them, and their published
 * skills' digests (`readPublishedSkillsDigests`: an agent without a published skill has none),
 * where an agent's recorded ones (`agent_activity_records`) are used instead of reading its posts
 * or purchases again. A record has two parts, its posts' and its sales': a part is used when it was
 * recorded from the same sources, by the same code, at or before `now`, and before the first of
 * its rows leaves its window. So a sale rereads the seller's purchases but not its skills, and a
 * publication the reverse. The parts read again are read with their sources in one snapshot, so a
 * part names exactly what it was read from, and recorded. The similar lists' count is always read.
 * For the agents' document pages, where most agents did not change since the last render;
 * `reread` counts the agents with a part read again.
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
  const postsKept = new Map<string, PostsPart>();
  const salesKept = new Map<string, SalesPart>();
  for (const id of ids) {
    const r = records.get(id);
    const s = sources.get(id);
    const parts = r && recordedParts(r.sources);
    if (!r || !s || !parts || r.asOf.getTime() > now.getTime()) continue;
    const holds = (until: Date | null) => until === null || now.getTime() < until.getTime();
    if (parts.posts === s.posts && holds(r.postsValidUntil)) postsKept.set(id, { ...r, sources: parts.posts });
    if (parts.sales === s.sales && holds(r.salesValidUntil)) salesKept.set(id, { ...r, sources: parts.sales });
  }
  const readPosts = ids.filter((id) => !postsKept.has(id));
  const readSales = ids.filter((id) => !salesKept.has(id));
  const reread = ids.filter((id) => !postsKept.has(id) || !salesKept.has(id));
  const rereadSet = new Set(reread);
  const fresh = reread.length
    ? await db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => ({
          // Each side's sources only for the agents whose part of that side is read again.
          postsSources: await readSideSources(trx, 'posts', readPosts, since),
          salesSources: await readSideSources(trx, 'sales', readSales, since),
          own: await loadPostsActivity(trx, readPosts, since),
          skills: await readPublishedSkillsDigests(trx, readPosts),
          sales: await loadSalesActivity(trx, readSales, since),
        }))
    : undefined;
  const postsOf = new Map(fresh?.own.posts.map(({ agent_id, ...p }) => [agent_id, p]));
  const categoriesOf = new Map(fresh?.own.categories.map((c) => [c.agent_id, c.n]));
  const salesOf = new Map(fresh?.sales.map(({ agent_id, ...s }) => [agent_id, s]));
  const partsOf = (id: string): { posts: PostsPart; sales: SalesPart } | undefined => {
    const p = fresh?.postsSources.get(id);
    const s = fresh?.salesSources.get(id);
    const posts =
      postsKept.get(id) ??
      (p && {
        sources: p.sources,
        posts: postsOf.get(id) ?? null,
        categories: categoriesOf.get(id) ?? null,
        skillsDigest: fresh?.skills.get(id) ?? null,
        postsValidUntil: leaves(p.oldestRecent, WINDOW_DAYS.short),
      });
    const sales =
      salesKept.get(id) ??
      (s && {
        sources: s.sources,
        sales: salesOf.get(id) ?? null,
        salesValidUntil: leaves(s.oldestRecent, WINDOW_DAYS.long),
      });
    return posts && sales ? { posts, sales } : undefined;
  };
  const all = ids.flatMap((agentId) => {
    const parts = partsOf(agentId);
    return parts ? [{ agentId, ...parts }] : [];
  });
  await saveActivityRecords(
    db,
    all
      .filter(({ agentId }) => rereadSet.has(agentId))
      .map(({ agentId, posts, sales }) => ({
        agentId,
        sources: recordedSources(posts.sources, sales.sources),
        asOf: now,
        posts: posts.posts,
        categories: posts.categories,
        skillsDigest: posts.skillsDigest,
        postsValidUntil: posts.postsValidUntil,
        sales: sales.sales,
        salesValidUntil: sales.salesValidUntil,
      })),
  );
  const out: ActivityAggregates = { posts: [], categories: [], sales: [], incoming };
  const skillsDigests = new Map<string, string>();
  for (const { agentId, posts, sales } of all) {
    if (posts.posts) out.posts.push({ agent_id: agentId, ...posts.posts });
    if (posts.categories !== null) out.categories.push({ agent_id: agentId, n: posts.categories });
    if (posts.skillsDigest !== null) skillsDigests.set(agentId, posts.skillsDigest);
    if (sales.sales) out.sales.push({ agent_id: agentId, ...sales.sales });
  }
  return { ...out, skillsDigests, reread: reread.length };
}
