import { createHash } from 'node:crypto';
import { getAddress, type Address } from 'viem';
import type { Db } from '../../data/db.js';
import type { DB, Payment, PostStatus, PostVersionsTable } from '../../data/schema.js';
import type { Selectable, Transaction } from 'kysely';
import { AppError, ConflictError, ForbiddenError, NotFoundError } from '../../platform/errors.js';
import type { AgentClaims } from '../identity/jwt.js';
import type { PaidResource } from '../payments/paywall.js';
import type { SettlementEffect } from '../payments/settlement.js';
import { fullView, previewView, type PostViewContext } from '../../documents/post.renderer.js';
import { MAX_BODY_BYTES, type CreatePost, type NewVersion, type UpdatePost } from './post.schemas.js';
import {
  findPostWithAuthor,
  findVersion,
  hasEntitlement,
  insertEvent,
  type PostWithAuthor,
} from './posts.repository.js';
import { syncSearchTier } from '../discovery/search-tier.js';

export interface PostsDeps extends PostViewContext {
  db: Db;
}

class BodyTooLargeError extends AppError {
  constructor(bytes: number) {
    super(413, 'post_body_too_large', `The skill files are ${bytes} bytes; the limit is ${MAX_BODY_BYTES} bytes`);
  }
}

function measureBody(body: CreatePost['body']) {
  const canonical = JSON.stringify(body);
  const bytes = body.files.reduce((n, f) => n + Buffer.byteLength(f.content, 'utf8'), 0);
  if (bytes > MAX_BODY_BYTES) throw new BodyTooLargeError(bytes);
  return { bytes, sha256: createHash('sha256').update(canonical).digest('hex') };
}

function insertVersion(
  trx: Transaction<DB>,
  postId: string,
  version: number,
  input: NewVersion,
  measured: { bytes: number; sha256: string },
) {
  return trx
    .insertInto('post_versions')
    .values({
      post_id: postId,
      version,
      version_label: input.version,
      body: JSON.stringify(input.body),
      body_sha256: measured.sha256,
      body_bytes: measured.bytes,
      install_manifest: input.installManifest ? JSON.stringify(input.installManifest) : null,
    })
    .execute();
}

/** Creates a draft (version 1). Only its author sees it until it is published. */
export async function createPost(db: Db, authorId: string, input: CreatePost) {
  const { bytes, sha256 } = measureBody(input.body);
  return db.transaction().execute(async (trx) => {
    const post = await trx
      .insertInto('posts')
      .values({
        author_id: authorId,
        title: input.title,
        preview: input.preview,
        price_atomic: input.priceAtomic,
        tags: input.tags,
        oasf_skills: input.oasfSkills,
        oasf_domains: input.oasfDomains,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await insertVersion(trx, post.id, 1, input, { bytes, sha256 });
    await insertEvent(trx, 'post.created', { agentId: authorId, postId: post.id });
    return post.id;
  });
}

/** Loads a post for a change by its author: 404 when it does not exist, 403 for anyone else. */
async function loadOwned(db: Db, postId: string, authorId: string): Promise<PostWithAuthor> {
  const post = await findPostWithAuthor(db, postId);
  if (!post) throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  if (post.author_id !== authorId) throw new ForbiddenError('Only the author may change this post', 'not_post_author');
  return post;
}

export async function updatePost(db: Db, authorId: string, postId: string, patch: UpdatePost) {
  const post = await loadOwned(db, postId, authorId);
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('posts')
      .set({
        ...(patch.title !== undefined ? { title: patch.title } : {}),
        ...(patch.preview !== undefined ? { preview: patch.preview } : {}),
        ...(patch.priceAtomic !== undefined ? { price_atomic: patch.priceAtomic } : {}),
        ...(patch.tags !== undefined ? { tags: patch.tags } : {}),
        ...(patch.oasfSkills !== undefined ? { oasf_skills: patch.oasfSkills } : {}),
        ...(patch.oasfDomains !== undefined ? { oasf_domains: patch.oasfDomains } : {}),
        updated_at: new Date(),
      })
      .where('id', '=', post.id)
      .execute();
    await insertEvent(trx, 'post.updated', {
      agentId: authorId,
      postId: post.id,
      payload: { fields: Object.keys(patch) },
    });
    await syncSearchTier(trx, post.id);
  });
}

const TRANSITIONS: Record<'publish' | 'unpublish', { from: PostStatus[]; to: PostStatus; event: string }> = {
  publish: { from: ['draft', 'unpublished'], to: 'published', event: 'post.published' },
  unpublish: { from: ['published'], to: 'unpublished', event: 'post.unpublished' },
};

/** Publishes a draft (or republishes), or unpublishes a published post. Buyers keep their access either way. */
export async function setPublication(db: Db, authorId: string, postId: string, action: 'publish' | 'unpublish') {
  const post = await loadOwned(db, postId, authorId);
  const t = TRANSITIONS[action];
  if (!t.from.includes(post.status))
    throw new ConflictError(`A ${post.status} post cannot be ${action}ed`, `post_${post.status}`);
  const now = new Date();
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('posts')
      .set({
        status: t.to,
        updated_at: now,
        ...(action === 'publish' ? { published_at: now, first_published_at: post.first_published_at ?? now } : {}),
      })
      .where('id', '=', post.id)
      .where('status', 'in', t.from)
      .execute();
    await insertEvent(trx, t.event, { agentId: authorId, postId: post.id });
    await syncSearchTier(trx, post.id);
  });
}

/** Adds a new version of the skill files; it becomes what readers and new buyers get. */
export async function addVersion(db: Db, authorId: string, postId: string, input: NewVersion) {
  const post = await loadOwned(db, postId, authorId);
  const { bytes, sha256 } = measureBody(input.body);
  return db.transaction().execute(async (trx) => {
    const locked = await trx
      .selectFrom('posts')
      .select('current_version')
      .where('id', '=', post.id)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const version = locked.current_version + 1;
    await insertVersion(trx, post.id, version, input, { bytes, sha256 });
    await trx
      .updateTable('posts')
      .set({ current_version: version, updated_at: new Date() })
      .where('id', '=', post.id)
      .execute();
    await insertEvent(trx, 'post.version_added', { agentId: authorId, postId: post.id, payload: { version } });
    return version;
  });
}

export type PostRead =
  | { kind: 'document'; body: ReturnType<typeof previewView> | ReturnType<typeof fullView>; cacheable: boolean }
  | { kind: 'purchase'; resource: PaidResource<{ post: PostWithAuthor; version: Selectable<PostVersionsTable> }> };

/**
 * Who sees what: a published post's preview is public; drafts and unpublished posts exist only
 * for their author (and, for the full view, for buyers who keep their access). The full view is
 * free for free posts, for the author and for buyers; everyone else must buy it.
 */
export async function readPost(
  deps: PostsDeps,
  postId: string,
  view: 'preview' | 'full',
  viewer: AgentClaims | undefined,
): Promise<PostRead> {
  const post = await findPostWithAuthor(deps.db, postId);
  const notFound = () => new NotFoundError(`Post ${postId}`, 'post_not_found');
  if (!post) throw notFound();
  const isAuthor = viewer?.sub === post.author_id;
  const isBuyer = viewer && !isAuthor ? await hasEntitlement(deps.db, post.id, viewer.wallet) : false;
  if (post.status !== 'published' && !isAuthor && !(view === 'full' && isBuyer)) throw notFound();

  if (view === 'preview')
    return { kind: 'document', body: previewView(post, deps), cacheable: post.status === 'published' && !viewer };
  if (isAuthor || isBuyer || BigInt(post.price_atomic) === 0n) {
    const version = await findVersion(deps.db, post.id, post.current_version);
    return {
      kind: 'document',
      body: fullView(post, version, deps),
      cacheable: BigInt(post.price_atomic) === 0n && post.status === 'published' && !viewer,
    };
  }
  return { kind: 'purchase', resource: purchaseResource(deps, post) };
}

function purchaseResource(
  deps: PostsDeps,
  post: PostWithAuthor,
): PaidResource<{ post: PostWithAuthor; version: Selectable<PostVersionsTable> }> {
  return {
    purpose: 'purchase',
    postId: post.id,
    terms: {
      amountAtomic: BigInt(post.price_atomic),
      payTo: getAddress(post.author_wallet) as Address,
      asset: deps.chain.usdc,
      chainId: deps.chain.chainId,
      resourceUrl: `${deps.site.baseUrl}/api/posts/${post.id}?view=full`,
      description: `Full access to the skill "${post.title}" by @${post.author_handle}`,
      mimeType: 'application/json',
      maxTimeoutSeconds: 300,
    },
    prepare: async () => {
      // Re-read: the post may have been unpublished or repriced since the 402 was issued.
      const current = await findPostWithAuthor(deps.db, post.id);
      if (!current || current.status !== 'published') throw new NotFoundError(`Post ${post.id}`, 'post_not_found');
      return { post: current, version: await findVersion(deps.db, post.id, current.current_version) };
    },
    render: async (_payment: Payment, prepared) => fullView(prepared.post, prepared.version, deps),
  };
}

/**
 * A settled purchase records the entitlement and the facts scores, trending, reputation and
 * health read (buyer, seller, post and version, amount, transaction), and emits the event that
 * enqueues their recomputation — in the transaction that marks the payment settled.
 */
export const purchaseEffect: SettlementEffect = async (trx, payment) => {
  const post = await trx
    .selectFrom('posts')
    .select(['id', 'author_id', 'current_version'])
    .where('id', '=', payment.post_id!)
    .executeTakeFirstOrThrow();
  const buyer = await trx
    .selectFrom('agents')
    .select('id')
    .where('wallet_address', '=', payment.payer)
    .executeTakeFirst();
  await trx
    .insertInto('purchases')
    .values({
      payment_id: payment.id,
      post_id: post.id,
      post_version: post.current_version,
      seller_id: post.author_id,
      buyer_address: payment.payer,
      buyer_agent_id: buyer?.id ?? null,
      amount_atomic: payment.amount_atomic,
      tx_hash: payment.tx_hash!,
    })
    .execute();
  await insertEvent(trx, 'purchase.settled', {
    agentId: post.author_id,
    postId: post.id,
    payload: {
      paymentId: payment.id,
      buyer: payment.payer,
      buyerAgentId: buyer?.id ?? null,
      amount: payment.amount_atomic,
    },
  });
};
