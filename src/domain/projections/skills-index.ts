import { getAddress } from 'viem';
import type { Executor } from '../../data/db.js';
import {
  countPublishedSkills,
  findVersionsOf,
  readMostBoughtSkillIds,
  readPublishedSkills,
  shardsWithPublishedSkills,
  type IndexedVersionRow,
  type PublishedSkill,
} from '../../data/posts.repository.js';
import { withSkillsIndexLock } from '../../data/discovery.repository.js';
import { readSnapshot, saveSnapshot } from '../../data/scoring.repository.js';
import { readSkillRatings, type Rating } from '../../data/reviews.repository.js';
import { findPublishedIdentities } from '../../data/documents.repository.js';
import { jsonBytes } from '../../documents/document.js';
import type { PostViewContext } from '../../documents/post.renderer.js';
import type { IndexedSkill, IndexedVersion } from '../../documents/skills/skills-index.renderer.js';
import { skillsIndexDocument, skillsIndexShardDocument } from '../../documents/skills/skills-index.document.js';
import { SKILLS_INDEX_SHARDS } from '../../documents/skills/skills-index.renderer.js';
import { publishDocument, type PublishDeps } from '../publishing/publish-document.js';
import { archiveDigests, archiveRef, isPortablePath } from '../skills/skill-archives.js';
import { archiveUrl } from '../../documents/skills/skills-index.renderer.js';
import {
  readFrontmatter,
  SKILL_DESCRIPTION_MAX,
  SKILL_NAME_PATTERN,
} from '@skill-market/skill-protocol/skill-frontmatter';

function indexedVersion(v: IndexedVersionRow, baseUrl: string): IndexedVersion {
  return {
    version: v.version,
    versionLabel: v.version_label,
    digest: v.skill_digest,
    files: v.file_digests,
    signature: v.signer && v.signature ? { signer: getAddress(v.signer), value: v.signature, scheme: 'eip712' } : null,
    createdAt: v.created_at.toISOString(),
    audit: {
      verdict: v.audit_verdict ?? 'pending',
      counts: v.audit_counts,
      overridden: v.audit_overridden,
      report: `${baseUrl}/api/posts/${v.post_id}/versions/${v.version}/audit.json`,
    },
  };
}

/** A skill's rating as its index entry carries it (an extension field). */
function indexedRating(postId: string, r: Rating | undefined, baseUrl: string) {
  const counted = r?.count ? r : undefined;
  return {
    count: counted?.count ?? 0,
    mean: counted ? Math.round((counted.total / counted.count) * 100) / 100 : null,
    adjusted: counted?.adjusted ?? null,
    reviews: `${baseUrl}/api/posts/${postId}/reviews.json`,
  };
}

/**
 * The skills the index lists: every published post, named by its current version's Agent Skill
 * name, described by that version's SKILL.md frontmatter (the preview when it has no description),
 * with the digests and signature stored with each of its versions.
 */
const portablePaths = (v: IndexedVersionRow) => v.file_digests.every((f) => isPortablePath(f.path));

async function indexedSkills(db: Executor, ctx: PostViewContext, posts: PublishedSkill[]): Promise<IndexedSkill[]> {
  const ids = posts.map((p) => p.id);
  const [versions, ratings] = await Promise.all([findVersionsOf(db, ids), readSkillRatings(db, ids)]);
  const byPost = new Map<string, IndexedVersionRow[]>();
  for (const v of versions) byPost.set(v.post_id, [...(byPost.get(v.post_id) ?? []), v]);
  return posts.flatMap((post): IndexedSkill[] => {
    const all = byPost.get(post.id) ?? [];
    const current = all.find((v) => v.version === post.current_version);
    // A skill an installer could not write (a path stored before the path rules) is left out, so
    // it never keeps the index from being published for every other skill.
    if (!current || !SKILL_NAME_PATTERN.test(current.skill_name) || !all.every(portablePaths)) return [];
    const fm = readFrontmatter(post.skill_md_head ?? '');
    const description = (fm?.description?.trim() || post.preview).slice(0, SKILL_DESCRIPTION_MAX);
    return [
      {
        id: post.id,
        name: current.skill_name,
        description,
        title: post.title,
        seller: { handle: post.author_handle, walletAddress: getAddress(post.author_wallet) },
        price: {
          amount: post.price_atomic,
          asset: ctx.chain.usdc.address,
          decimals: ctx.chain.usdc.decimals,
          network: ctx.site.network,
          free: BigInt(post.price_atomic) === 0n,
        },
        current: indexedVersion(current, ctx.site.baseUrl),
        versions: all.map((v) => indexedVersion(v, ctx.site.baseUrl)),
        updatedAt: post.updated_at.toISOString(),
        rating: indexedRating(post.id, ratings.get(post.id), ctx.site.baseUrl),
      },
    ];
  });
}

/**
 * The skills with the archive of each version attached where it is published. Every version of
 * the index's skills is built and published first when `build` is given (the draft form of the
 * index names every inline skill's archive; each version is built once, ever); a skill whose
 * current archive is still missing is left out of the index. Shards only read what is published
 * (a shard's render reads no file).
 */
async function withArchives(
  db: Executor,
  skills: IndexedSkill[],
  baseUrl: string,
  build?: Pick<PublishDeps, 'store' | 'documentsPublished'>,
): Promise<IndexedSkill[]> {
  const refs = () =>
    skills.flatMap((s) => s.versions.map((v) => ({ postId: s.id, version: v.version, free: s.price.free })));
  const digests = await archiveDigests(build ? { db, ...build } : { db }, refs());
  const attach = (id: string, v: IndexedVersion): IndexedVersion => {
    const digest = digests.get(archiveRef(id, v.version));
    return digest ? { ...v, archive: { url: archiveUrl(baseUrl, id, v.version), digest } } : v;
  };
  return skills
    .map((s) => ({ ...s, current: attach(s.id, s.current), versions: s.versions.map((v) => attach(s.id, v)) }))
    .filter((s) => !build || s.current.archive);
}

/** How many skills the index lists inline: the most bought, then the newest. */
export const SKILLS_INDEX_INLINE = 100;

/** Where the workers' publish of the index keeps the count it published, for the API's render. */
const COUNT_SNAPSHOT = 'skills-index-total';

/**
 * The count of published skills the index states: counted by the workers' publish (a batch
 * statement over every published skill, in the job, never in a request) and kept, so that the
 * API's render reads one row. Before the first publish the API counts (a marketplace that new is
 * small).
 */
async function publishedTotal(db: Executor, counting: boolean): Promise<number> {
  if (!counting) {
    const kept = (await readSnapshot(db, COUNT_SNAPSHOT))?.document.total;
    if (typeof kept === 'number') return kept;
  }
  const total = await countPublishedSkills(db);
  if (counting) await saveSnapshot(db, COUNT_SNAPSHOT, { total }, new Date());
  return total;
}

/**
 * The discovery index as it reads now: the most bought skills, the count, every shard. `archives`
 * publishes the inline skills' missing archives (the workers' publish and the API's fallback).
 * `counting`: the workers' publish counts the published skills and keeps the count; the API's
 * render states the count the last publish kept.
 */
export async function skillsIndex(
  db: Executor,
  ctx: PostViewContext,
  archives: Pick<PublishDeps, 'store' | 'documentsPublished'>,
  counting = false,
) {
  const ids = await readMostBoughtSkillIds(db, SKILLS_INDEX_INLINE);
  const found = await readPublishedSkills(db, { order: 'first-published', ids: { in: ids } });
  const byId = new Map(found.map((p) => [p.id, p]));
  const posts = ids.flatMap((id) => byId.get(id) ?? []);
  return skillsIndexDocument.render({
    baseUrl: ctx.site.baseUrl,
    skills: await withArchives(db, await indexedSkills(db, ctx, posts), ctx.site.baseUrl, archives),
    total: await publishedTotal(db, counting),
  });
}

/**
 * One shard as it reads now: every published skill whose id starts with its two hex digits, first
 * published first. At a million skills a shard holds about 4,000, so a render reads a bounded set.
 */
export async function skillsIndexShard(db: Executor, ctx: PostViewContext, shard: string) {
  const posts = await readPublishedSkills(db, { order: 'first-published', ids: { shard } });
  return skillsIndexShardDocument.render({
    baseUrl: ctx.site.baseUrl,
    shard,
    skills: await withArchives(db, await indexedSkills(db, ctx, posts), ctx.site.baseUrl),
  });
}

/**
 * Renders, validates and publishes the discovery index, or one of its shards (unchanged bytes are
 * not written again). One publish of each at a time across the service's processes: two jobs of
 * successive windows running at once could otherwise put the older render last, and the document
 * would miss the newer change until the next.
 */
export function publishSkillsIndex(deps: PublishDeps & PostViewContext, shard?: string) {
  return withSkillsIndexLock(deps.db, shard ?? 'index', async (conn) => {
    if (shard === undefined) {
      const doc = await skillsIndex(conn, deps, deps, true);
      const { outcome } = await publishDocument(
        { ...deps, db: conn },
        { document: skillsIndexDocument, key: skillsIndexDocument.key(), body: jsonBytes(doc) },
      );
      return { index: outcome, skills: doc.skills.length };
    }
    const doc = await skillsIndexShard(conn, deps, shard);
    const { outcome } = await publishDocument(
      { ...deps, db: conn },
      { document: skillsIndexShardDocument, key: skillsIndexShardDocument.key({ shard }), body: jsonBytes(doc) },
    );
    return { shard, index: outcome, skills: doc.skills.length };
  });
}

/**
 * The shards that list published skills and that the bucket has not got: a marketplace whose
 * skills were published before the index was sharded has none until its skills change, and the
 * index links them all. Read off the bookkeeping of what was published (256 keys) and one probe
 * per shard; an empty shard left unpublished is answered by the API, cheaply.
 */
export async function unpublishedShards(db: Executor): Promise<string[]> {
  const keys = SKILLS_INDEX_SHARDS.map((shard) => skillsIndexShardDocument.key({ shard }));
  const published = await findPublishedIdentities(db, keys);
  return shardsWithPublishedSkills(
    db,
    SKILLS_INDEX_SHARDS.filter((_, i) => !published.has(keys[i] ?? '')),
  );
}
