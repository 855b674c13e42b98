import { sql, type RawBuilder, type Selectable } from 'kysely';
import { z } from 'zod';
import { executePrepared, PREPARED, type Executor } from './db.js';
import { StoredManifest } from './column-types.js';
import { notOwnPurchase, skillSales } from './own-purchases.js';
import type { SettledFields } from './payments.repository.js';
import type { Payment, Post, PostStatus, PostVersionsTable, Sale } from './schema.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A post with the author fields its views and its x402 listing show. */
export type PostWithAuthor = Post & {
  author_handle: string;
  author_wallet: string;
  author_avatar_url: string | null;
  current_audit: 'pass' | 'warn' | 'fail' | 'pending' | null;
  current_rating: RatingSummary | null;
};
/** One stored version of a post's skill files. */
export type PostVersion = Selectable<PostVersionsTable>;

/** The JSON columns of a version, checked as they are read (they were validated when written). */
export const StoredBody = z.object({ files: z.array(z.object({ path: z.string(), content: z.string() })) });
export const StoredDigests = z.array(z.object({ path: z.string(), digest: z.string() }));

/** Posts with the author fields their views show (a query to narrow down). */
export const postsWithAuthor = (db: Executor) =>
  db
    .selectFrom('posts')
    .innerJoin('agents', 'agents.id', 'posts.author_id')
    .selectAll('posts')
    .select([
      'agents.handle as author_handle',
      'agents.wallet_address as author_wallet',
      'agents.avatar_url as author_avatar_url',
      currentAudit(sql.ref('posts.id'), sql.ref('posts.current_version')).as('current_audit'),
      currentRating(sql.ref('posts.id')).as('current_rating'),
    ]);

/** A skill's rating as its previews carry it (docs/reputation.md "Rating"); null before any review counts. */
export interface RatingSummary {
  count: number;
  mean: number;
  adjusted: number;
}

/** The rating of a skill, from skill_ratings, as previews, search and listings show it. */
export const currentRating = (postId: RawBuilder<unknown>) =>
  sql<RatingSummary | null>`(SELECT jsonb_build_object('count', r.count, 'mean', round(r.total::numeric / r.count, 2),
    'adjusted', r.adjusted) FROM skill_ratings r WHERE r.post_id = ${postId} AND r.count > 0)`;

/**
 * The audit verdict of a skill's current version as its preview states it: 'pending' before the
 * audit, 'fail' only while no operator overrode it (an overridden failure reads 'warn').
 */
export const currentAudit = (postId: RawBuilder<unknown>, version: RawBuilder<unknown>) =>
  sql<'pass' | 'warn' | 'fail' | 'pending'>`(SELECT CASE WHEN v.audit_verdict IS NULL THEN 'pending'
    WHEN v.audit_verdict = 'fail' AND v.audit_override IS NOT NULL THEN 'warn' ELSE v.audit_verdict END
    FROM post_versions v WHERE v.post_id = ${postId} AND v.version = ${version})`;

/** A post with its author's public fields, or undefined (also for ids that are not UUIDs). */
export async function findPostWithAuthor(db: Executor, postId: string): Promise<PostWithAuthor | undefined> {
  if (!UUID.test(postId)) return undefined;
  const posts = await executePrepared(db, postsWithAuthor(db).where('posts.id', '=', postId.toLowerCase()));
  return posts[0];
}

/** One version of a post; throws when it does not exist (a post always has its current version). */
export async function findVersion(db: Executor, postId: string, version: number): Promise<PostVersion> {
  const [row] = await executePrepared(
    db,
    db.selectFrom('post_versions').selectAll().where('post_id', '=', postId).where('version', '=', version),
  );
  if (!row) throw new Error(`post ${postId} has no version ${version}`);
  return {
    ...row,
    body: StoredBody.parse(row.body),
    install_manifest: StoredManifest.parse(row.install_manifest),
    file_digests: StoredDigests.parse(row.file_digests),
  };
}

/** Whether `wallet` bought `postId` (a settled purchase is an entitlement for good, until it is refunded). */
export async function hasEntitlement(db: Executor, postId: string, wallet: string): Promise<boolean> {
  const query = db.selectFrom('purchases').select('id').where('post_id', '=', postId).where('refunded_at', 'is', null);
  return Boolean(await query.where('buyer_address', '=', wallet.toLowerCase()).limit(1).executeTakeFirst());
}

/** The listing fields of a post, as the author writes them. */
export interface PostFields {
  title: string;
  preview: string;
  priceAtomic: string;
  tags: string[];
  oasfSkills: string[];
  oasfDomains: string[];
}

/**
 * Inserts a draft post (version 1 follows with `insertVersion`); returns its id, or undefined
 * when the author already has a skill of that name.
 */
export async function insertPost(
  trx: Executor,
  authorId: string,
  fields: PostFields & { skillName: string },
): Promise<string | undefined> {
  const post = await trx
    .insertInto('posts')
    .values({
      author_id: authorId,
      title: fields.title,
      preview: fields.preview,
      price_atomic: fields.priceAtomic,
      tags: fields.tags,
      oasf_skills: fields.oasfSkills,
      oasf_domains: fields.oasfDomains,
      skill_name: fields.skillName,
    })
    .onConflict((oc) => oc.columns(['author_id', 'skill_name']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return post?.id;
}

/** A version's files and their measure, as stored. */
export interface NewVersionRow {
  postId: string;
  version: number;
  versionLabel: string;
  body: { files: Array<{ path: string; content: string }> };
  bodySha256: string;
  bodyBytes: number;
  installManifest: Record<string, unknown> | undefined;
  skillName: string;
  fileDigests: Array<{ path: string; digest: string }>;
  skillDigest: string;
  /** The seller's signature, when it came with the files. */
  signed?: VersionSignatureRow;
}

/** A seller's signature over a version, as stored. */
export interface VersionSignatureRow {
  signer: string;
  signature: string;
  at: Date;
}

/** Inserts one version of a post's skill files. */
export async function insertVersion(trx: Executor, row: NewVersionRow): Promise<void> {
  await trx
    .insertInto('post_versions')
    .values({
      post_id: row.postId,
      version: row.version,
      version_label: row.versionLabel,
      body: JSON.stringify(row.body),
      body_sha256: row.bodySha256,
      body_bytes: row.bodyBytes,
      install_manifest: row.installManifest ? JSON.stringify(row.installManifest) : null,
      skill_name: row.skillName,
      file_digests: JSON.stringify(row.fileDigests),
      skill_digest: row.skillDigest,
      ...(row.signed
        ? {
            signer: row.signed.signer.toLowerCase(),
            signature: row.signed.signature.toLowerCase(),
            signed_at: row.signed.at,
          }
        : {}),
    })
    .execute();
}

/** Records the seller's signature of a version not signed yet; false when it already is. */
export async function setVersionSignature(
  trx: Executor,
  postId: string,
  version: number,
  signed: VersionSignatureRow,
): Promise<boolean> {
  const result = await trx
    .updateTable('post_versions')
    .set({ signer: signed.signer.toLowerCase(), signature: signed.signature.toLowerCase(), signed_at: signed.at })
    .where('post_id', '=', postId)
    .where('version', '=', version)
    .where('signature', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Writes the given listing fields of a post (the others are left as they are). */
export async function updatePostFields(
  trx: Executor,
  postId: string,
  patch: Partial<PostFields>,
  now: Date,
): Promise<void> {
  await trx
    .updateTable('posts')
    .set({
      ...(patch.title !== undefined ? { title: patch.title } : {}),
      ...(patch.preview !== undefined ? { preview: patch.preview } : {}),
      ...(patch.priceAtomic !== undefined ? { price_atomic: patch.priceAtomic } : {}),
      ...(patch.tags !== undefined ? { tags: patch.tags } : {}),
      ...(patch.oasfSkills !== undefined ? { oasf_skills: patch.oasfSkills } : {}),
      ...(patch.oasfDomains !== undefined ? { oasf_domains: patch.oasfDomains } : {}),
      updated_at: now,
    })
    .where('id', '=', postId)
    .execute();
}

/**
 * Moves a post to `to` if it is still in one of `from` (a concurrent change loses nothing);
 * `published` sets the publication dates.
 */
export async function updatePostStatus(
  trx: Executor,
  postId: string,
  change: { from: PostStatus[]; to: PostStatus; now: Date; published?: { at: Date; firstAt: Date } },
): Promise<void> {
  await trx
    .updateTable('posts')
    .set({
      status: change.to,
      updated_at: change.now,
      ...(change.published ? { published_at: change.published.at, first_published_at: change.published.firstAt } : {}),
    })
    .where('id', '=', postId)
    .where('status', 'in', change.from)
    .execute();
}

/**
 * Locks a skill's row, first in a transaction that writes rows whose triggers touch the skill (its
 * versions, reviews, audits, moderation): those triggers update the skill's row and recount its
 * rating, and the feedback follower and a publish take the skill before such rows too. One order,
 * skill first, where the reverse deadlocked. NO KEY UPDATE leaves foreign-key checks on the skill free.
 */
export async function lockPostFirst(trx: Executor, postId: string): Promise<void> {
  await trx.selectFrom('posts').select('id').where('id', '=', postId).forNoKeyUpdate().execute();
}

/** Locks the post's row for the transaction and returns its current version number. */
export async function lockCurrentVersion(trx: Executor, postId: string): Promise<number> {
  const row = await trx
    .selectFrom('posts')
    .select('current_version')
    .where('id', '=', postId)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return row.current_version;
}

/** Makes `version` the one readers and new buyers get. */
export async function setCurrentVersion(trx: Executor, postId: string, version: number, now: Date): Promise<void> {
  await trx.updateTable('posts').set({ current_version: version, updated_at: now }).where('id', '=', postId).execute();
}

/**
 * Settles purchases in one statement (one round trip for every purchase a settlement batch
 * carried): marks each payment settled with its transaction, and records the entitlement with the
 * version its request served (the post's current one when unknown) and that version's skill
 * digest, the seller, the buyer's agent when the paying wallet has one, and the
 * `purchase.settled` event the dispatcher turns into recomputations. All or nothing for each
 * payment: one not in one of `from` (settled already), or whose post and version are not
 * recorded, is left as it is and missing from the rows returned.
 */
export async function settlePurchases(db: Executor, list: SettledFields[], from: string[]): Promise<Payment[]> {
  if (!list.length) return [];
  const { rows } = await sql<Payment>`${PREPARED}
    WITH given AS (
      SELECT * FROM unnest(${list.map((s) => s.id)}::uuid[], ${list.map((s) => s.txHash)}::text[],
                           ${list.map((s) => s.facilitator ?? null)}::text[],
                           ${list.map((s) => s.settledAt.toISOString())}::timestamptz[],
                           ${list.map((s) => s.postVersion ?? null)}::int[])
        AS g(id, tx_hash, facilitator, settled_at, post_version)
    ), settled AS (
      UPDATE payments AS pay
      SET status = 'settled', updated_at = ${new Date()}, tx_hash = g.tx_hash,
          facilitator = coalesce(g.facilitator, pay.facilitator), settled_at = g.settled_at,
          failure_reason = NULL
      FROM given g
      WHERE pay.id = g.id AND pay.purpose = 'purchase' AND pay.status = ANY(${from}::text[])
        AND EXISTS (
          SELECT 1 FROM posts p
          JOIN post_versions v ON v.post_id = p.id AND v.version = coalesce(g.post_version, p.current_version)
          WHERE p.id = pay.post_id
        )
      RETURNING pay.*
    ), purchase AS (
      INSERT INTO purchases (payment_id, post_id, post_version, skill_digest, seller_id, buyer_address,
                             buyer_agent_id, amount_atomic, tx_hash)
      SELECT s.id, p.id, v.version, v.skill_digest, p.author_id, s.payer,
             (SELECT a.id FROM agents a WHERE a.wallet_address = s.payer), s.amount_atomic, s.tx_hash
      FROM settled s
      JOIN given g ON g.id = s.id
      JOIN posts p ON p.id = s.post_id
      JOIN post_versions v ON v.post_id = p.id AND v.version = coalesce(g.post_version, p.current_version)
      RETURNING payment_id, seller_id, post_id, buyer_address, buyer_agent_id, amount_atomic
    ), event AS (
      INSERT INTO domain_events (type, agent_id, post_id, payload)
      SELECT 'purchase.settled', seller_id, post_id,
             jsonb_build_object('paymentId', payment_id::text, 'buyer', buyer_address::text,
                                'buyerAgentId', buyer_agent_id, 'amount', amount_atomic::text)
      FROM purchase
    )
    SELECT * FROM settled`.execute(db);
  return rows;
}

/** What a settled purchase bought (post, version and its skill digest), by the payment it was paid with. */
export function findPurchaseOfPayment(db: Executor, paymentId: string) {
  return db
    .selectFrom('purchases')
    .select(['post_id', 'post_version', 'skill_digest'])
    .where('payment_id', '=', paymentId)
    .executeTakeFirst();
}

/** A version row as `to_jsonb` gives it: its times as ISO text. */
const VersionJson = z.object({
  post_id: z.string(),
  version: z.number(),
  version_label: z.string(),
  body: StoredBody,
  body_sha256: z.string(),
  body_bytes: z.number(),
  install_manifest: StoredManifest,
  created_at: z.coerce.date(),
  skill_name: z.string(),
  file_digests: StoredDigests,
  skill_digest: z.string(),
  signer: z.string().nullable(),
  signature: z.string().nullable(),
  signed_at: z.coerce.date().nullable(),
  audit_verdict: z.enum(['pass', 'warn', 'fail']).nullable(),
  audit_rules_version: z.number().nullable(),
  audit_report: z.record(z.string(), z.unknown()).nullable(),
  audited_at: z.coerce.date().nullable(),
  audit_override: z.record(z.string(), z.unknown()).nullable(),
  removal: z.record(z.string(), z.unknown()).nullable(),
});

/**
 * A post with its author's public fields and its current version, in one statement (the full
 * view, and a purchase, read both); undefined for no such post (also for ids that are not UUIDs).
 */
export async function findPostWithCurrentVersion(
  db: Executor,
  postId: string,
): Promise<{ post: PostWithAuthor; version: PostVersion } | undefined> {
  if (!UUID.test(postId)) return undefined;
  const [row] = await executePrepared(
    db,
    postsWithAuthor(db)
      .select((eb) =>
        eb
          .selectFrom('post_versions as v')
          .select(sql<unknown>`to_jsonb(v)`.as('row'))
          .whereRef('v.post_id', '=', 'posts.id')
          .whereRef('v.version', '=', 'posts.current_version')
          .as('current_version_row'),
      )
      .where('posts.id', '=', postId.toLowerCase()),
  );
  if (!row) return undefined;
  const { current_version_row: version, ...post } = row;
  if (!version) throw new Error(`post ${post.id} has no version ${post.current_version}`);
  return { post, version: VersionJson.parse(version) };
}

/**
 * The newest version at or below `below` whose audit did not fail (or was overridden, or is still
 * pending): what a buyer is served while the current version failed its audit.
 */
export async function findNewestSellableVersion(
  db: Executor,
  postId: string,
  below: number,
): Promise<PostVersion | undefined> {
  return db
    .selectFrom('post_versions')
    .selectAll()
    .where('post_id', '=', postId)
    .where('version', '<=', below)
    .where('removal', 'is', null)
    .where((eb) =>
      eb.or([eb('audit_verdict', 'is', null), eb('audit_verdict', '!=', 'fail'), eb('audit_override', 'is not', null)]),
    )
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** A published skill as the MCP server lists it: its post, and the head of its current SKILL.md. */
/**
 * A published skill as the discovery reads list it (the skills index, the MCP catalogue): its
 * post, its seller, and enough of its current version to name and describe it (the frontmatter
 * of its SKILL.md) without reading its files.
 */
export interface PublishedSkill {
  id: string;
  title: string;
  preview: string;
  price_atomic: string;
  current_version: number;
  published_at: Date | null;
  updated_at: Date;
  author_handle: string;
  author_wallet: string;
  /** The Agent Skill name of the current version (its SKILL.md frontmatter `name`). */
  skill_name: string;
  /** The first 16 KiB of the current version's SKILL.md (its frontmatter), or null without one. */
  skill_md_head: string | null;
}

/** How much of SKILL.md is read to find its frontmatter: the spec caps `description` at 1024 characters. */
const HEAD_CHARS = 16_384;

/**
 * The published skills, either newest first (the MCP catalogue) or first published first (a
 * stable order, so the skills index renders alike), at most `limit` when one is given; only those
 * of one shard of the skills index (`ids.shard`), or among `ids.in`, when given.
 */
export async function readPublishedSkills(
  db: Executor,
  opts: {
    order: 'newest' | 'first-published';
    limit?: number;
    ids?: { shard: string } | { in: readonly string[] };
  },
): Promise<PublishedSkill[]> {
  let q = db
    .selectFrom('posts')
    .innerJoin('agents', 'agents.id', 'posts.author_id')
    .innerJoin('post_versions', (join) =>
      join.onRef('post_versions.post_id', '=', 'posts.id').onRef('post_versions.version', '=', 'posts.current_version'),
    )
    .where('posts.status', '=', 'published')
    .select([
      'posts.id',
      'posts.title',
      'posts.preview',
      'posts.price_atomic',
      'posts.current_version',
      'posts.published_at',
      'posts.updated_at',
      'agents.handle as author_handle',
      'agents.wallet_address as author_wallet',
      'post_versions.skill_name',
      // Raw SQL: a JSON path into the stored files, which Kysely's builder has no form for.
      sql<
        string | null
      >`left(jsonb_path_query_first(post_versions.body, '$.files[*] ? (@.path == "SKILL.md").content') #>> '{}', ${HEAD_CHARS})`.as(
        'skill_md_head',
      ),
    ]);
  const ids = opts.ids;
  if (ids && 'in' in ids) q = ids.in.length ? q.where('posts.id', 'in', ids.in) : q.where(sql.lit(false));
  else if (ids) q = q.where(inShard(sql.ref('posts.id'), sql.val(ids.shard)));
  const ordered =
    opts.order === 'newest'
      ? q.orderBy('posts.published_at', 'desc').orderBy('posts.id')
      : q.orderBy('posts.first_published_at').orderBy('posts.id');
  const rows = await (opts.limit === undefined ? ordered : ordered.limit(opts.limit)).execute();
  return rows.map((r) => ({ ...r, price_atomic: String(r.price_atomic) }));
}

/**
 * The condition that a post id is in a shard of the skills index (two hex digits: the first two
 * of the id), as a range of the primary key. Raw SQL: uuid bounds built from the shard's text.
 */
const inShard = (id: RawBuilder<unknown>, shard: RawBuilder<unknown>) =>
  sql<boolean>`${id} BETWEEN (${shard} || '000000-0000-0000-0000-000000000000')::uuid
                    AND (${shard} || 'ffffff-ffff-ffff-ffff-ffffffffffff')::uuid`;

/**
 * Which of these shards of the skills index list at least one published skill: one probe of the
 * primary key each.
 */
export async function shardsWithPublishedSkills(db: Executor, shards: readonly string[]): Promise<string[]> {
  if (!shards.length) return [];
  // Raw SQL: a probe per element of an array parameter (unnest and a correlated EXISTS).
  const { rows } = await sql<{ shard: string }>`
    SELECT s.shard FROM unnest(${shards}::text[]) AS s(shard)
    WHERE EXISTS (
      SELECT 1 FROM posts p WHERE ${inShard(sql.ref('p.id'), sql.ref('s.shard'))} AND p.status = 'published')`.execute(
    db,
  );
  return rows.map((r) => r.shard);
}

/** How many skills are published. */
export async function countPublishedSkills(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('posts')
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
    .where('status', '=', 'published')
    .executeTakeFirst();
  return row?.n ?? 0;
}

/**
 * The ids of the `limit` published skills most bought (distinct buyers, as their Bazaar listings
 * count them; free skills count none), then the newest: the skills the index lists inline.
 */
export async function readMostBoughtSkillIds(db: Executor, limit: number): Promise<string[]> {
  // Two reads in index order (migration 0031): the listings with buyers, then the newest skills.
  const bought = await db
    .selectFrom('bazaar_listings')
    .select('post_id')
    .where('buyers', '>', 0)
    .orderBy('buyers', 'desc')
    .orderBy('listed_at', 'desc')
    .orderBy('post_id')
    .limit(limit)
    .execute();
  const ids = bought.map((r) => r.post_id);
  if (ids.length >= limit) return ids;
  const newest = await db
    .selectFrom('posts')
    .select('id')
    .where('status', '=', 'published')
    .$if(ids.length > 0, (q) => q.where('id', 'not in', ids))
    .orderBy('first_published_at', 'desc')
    .orderBy('id')
    .limit(limit - ids.length)
    .execute();
  return [...ids, ...newest.map((r) => r.id)];
}

/** One version of a published skill: its Agent Skill name, digests and the seller's signature, as stored. */
export interface IndexedVersionRow {
  post_id: string;
  version: number;
  version_label: string;
  skill_name: string;
  skill_digest: string;
  file_digests: { path: string; digest: string }[];
  signer: string | null;
  signature: string | null;
  created_at: Date;
  audit_verdict: 'pass' | 'warn' | 'fail' | null;
  audit_counts: { fail: number; warn: number; info: number } | null;
  audit_overridden: boolean;
}

/** Every version of the given posts, newest first within a post; never their files. */
export async function findVersionsOf(db: Executor, postIds: readonly string[]): Promise<IndexedVersionRow[]> {
  if (!postIds.length) return [];
  const rows = await db
    .selectFrom('post_versions')
    .select([
      'post_id',
      'version',
      'version_label',
      'skill_name',
      'skill_digest',
      'file_digests',
      'signer',
      'signature',
      'created_at',
      'audit_verdict',
      sql<IndexedVersionRow['audit_counts']>`audit_report -> 'counts'`.as('audit_counts'),
      sql<boolean>`audit_override IS NOT NULL`.as('audit_overridden'),
    ])
    .where('post_id', 'in', postIds)
    .orderBy('post_id')
    .orderBy('version', 'desc')
    .execute();
  return rows.map((row) => ({ ...row, file_digests: StoredDigests.parse(row.file_digests) }));
}

/** A published skill as an agent's card lists it. */
export interface PublishedSkillRow {
  agent_id: string;
  id: string;
  title: string;
  preview: string;
  tags: string[];
  oasf_skills: string[];
  price_atomic: string;
  install_manifest: { type?: string } | null;
  skill_name: string;
  version: number;
  skill_digest: string;
  signed: boolean;
}

/** A settled sale with the seller it belongs to and the payment it was paid with. */
export type SaleRow = Sale & { seller_id: string; payment_id: string };

/**
 * The newest `limit` published skills of the agent `a.id` with what an agent's documents show of
 * them, and `r`, the row's record text (which quotes what it must, so two lists of skills with the
 * same texts in the same order are the same list): the lateral read of `findPublishedSkills` and
 * `readPublishedSkillsDigests`, so both read the same skills in the same order. The newest are
 * chosen from `posts_author_newest_published_idx` alone (an index-only scan once the table is
 * vacuumed), then read: a seller with thousands of skills costs the read of a hundred. Asked for
 * the rows and their order in one step, the planner, which plans for an average agent's handful,
 * reads every published skill of the agent and sorts them. The choice is made before the join to
 * `post_versions`, which finds every chosen post: a post's current version is written with it.
 */
const publishedSkillsOf = (limit: number) => sql`
  SELECT p.id, p.title, p.preview, p.tags, p.oasf_skills, p.price_atomic, v.install_manifest, p.published_at,
    v.skill_name, v.version, v.skill_digest, v.signature IS NOT NULL AS signed,
    ROW(p.id, p.title, p.preview, p.tags, p.oasf_skills, p.price_atomic, v.install_manifest,
      v.skill_name, v.version, v.skill_digest, v.signature IS NOT NULL)::text AS r
  FROM (SELECT id FROM posts WHERE author_id = a.id AND status = 'published'
        ORDER BY published_at DESC, id LIMIT ${limit}) newest
  JOIN posts p ON p.id = newest.id
  JOIN post_versions v ON v.post_id = p.id AND v.version = p.current_version`;

/**
 * The newest `limit` published skills of each agent, one statement for all, newest first; each
 * row also carries its agent's skills digest as `readPublishedSkillsDigests` computes it, read in
 * the same statement as the rows, so it describes exactly the skills rendered.
 */
export async function findPublishedSkills(
  db: Executor,
  agentIds: string[],
  limit = 100,
): Promise<Array<PublishedSkillRow & { skills_digest: string }>> {
  if (!agentIds.length) return [];
  const { rows } = await sql<PublishedSkillRow & { skills_digest: string }>`
    SELECT a.id AS agent_id, x.id, x.title, x.preview, x.tags, x.oasf_skills, x.price_atomic, x.install_manifest,
      x.published_at, x.skill_name, x.version, x.skill_digest, x.signed,
      md5(string_agg(x.r, chr(10)) OVER (PARTITION BY a.id ORDER BY x.published_at DESC, x.id
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)) AS skills_digest
    FROM unnest(${agentIds}::uuid[]) WITH ORDINALITY a(id, ord)
    CROSS JOIN LATERAL (${publishedSkillsOf(limit)}) x
    ORDER BY a.ord, x.published_at DESC, x.id`.execute(db);
  return rows;
}

/**
 * For each of `agentIds` with a published skill, the MD5 of what `findPublishedSkills` reads of its
 * skills, in its order, computed in PostgreSQL: a page decides whom to leave alone without reading
 * every skill back.
 */
export async function readPublishedSkillsDigests(
  db: Executor,
  agentIds: string[],
  limit = 100,
): Promise<Map<string, string>> {
  if (!agentIds.length) return new Map();
  const { rows } = await sql<{ agent_id: string; digest: string }>`
    SELECT a.id AS agent_id, md5(string_agg(x.r, chr(10) ORDER BY x.published_at DESC, x.id)) AS digest
    FROM unnest(${agentIds}::uuid[]) a(id)
    CROSS JOIN LATERAL (${publishedSkillsOf(limit)}) x
    GROUP BY a.id`.execute(db);
  return new Map(rows.map((r) => [r.agent_id, r.digest]));
}

/**
 * The newest `limit` sales of each seller, one statement for all, newest first; a seller's
 * purchases of its own skills are no sales (and not counted in the facts that fingerprint them).
 */
export async function findRecentSales(db: Executor, sellerIds: string[], limit: number): Promise<SaleRow[]> {
  if (!sellerIds.length) return [];
  const { rows } = await sql<SaleRow>`
    SELECT a.id AS seller_id, x.* FROM unnest(${sellerIds}::uuid[]) WITH ORDINALITY a(id, ord)
    CROSS JOIN LATERAL (
      SELECT id, post_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at, payment_id FROM purchases
      WHERE seller_id = a.id AND ${notOwnPurchase()} ORDER BY created_at DESC, id LIMIT ${limit}) x
    ORDER BY a.ord, x.created_at DESC, x.id`.execute(db);
  return rows;
}

/** A skill's sales as its page states them. */
export interface SkillPageFigures {
  /** Settled purchases of the skill by wallets other than its seller's. */
  sales: number;
  /** Distinct wallets among those purchases. */
  buyers: number;
}

/**
 * The sales a skill's page shows next to what the post states. A seller's purchase of its own
 * skill counts nowhere (own-purchases.ts), so not here either.
 */
export async function readSkillPageFigures(db: Executor, postId: string): Promise<SkillPageFigures> {
  const { sales, buyers } = skillSales(postId);
  const { rows } = await sql<{ sales: number; buyers: number }>`SELECT ${sales} AS sales, ${buyers} AS buyers`.execute(
    db,
  );
  return { sales: rows[0]?.sales ?? 0, buyers: rows[0]?.buyers ?? 0 };
}
