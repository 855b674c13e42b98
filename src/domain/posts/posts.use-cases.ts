import { createHash } from 'node:crypto';
import { getAddress, type Hex, type PublicClient } from 'viem';
import type { Db } from '../../data/db.js';
import type { PostStatus } from '../../data/schema.js';
import {
  findPostForPurchase,
  findPostWithAuthor,
  insertEvent,
  insertPost,
  insertPurchase,
  insertVersion,
  lockCurrentVersion,
  setCurrentVersion,
  updatePostFields,
  updatePostStatus,
  type PostWithAuthor,
} from '../../data/posts.repository.js';
import { findAgentIdByWallet } from '../../data/identity.repository.js';
import { saveOwnershipProof } from '../../data/ownership-proofs.repository.js';
import { AppError, ConflictError, ForbiddenError, NotFoundError } from '../../platform/errors.js';
import type { SettlementEffect } from '../payments/settlement.js';
import { syncSearchTier } from '../discovery/search-tier.js';
import { checkedSellerProof } from '../payments/ownership-proofs.js';
import { MAX_BODY_BYTES, type CreatePost, type NewVersion, type UpdatePost } from './post.schemas.js';

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

const versionRow = (
  postId: string,
  version: number,
  input: NewVersion,
  measured: { bytes: number; sha256: string },
) => ({
  postId,
  version,
  versionLabel: input.version,
  body: input.body,
  bodySha256: measured.sha256,
  bodyBytes: measured.bytes,
  installManifest: input.installManifest,
});

/** Creates a draft (version 1). Only its author sees it until it is published. */
export async function createPost(db: Db, authorId: string, input: CreatePost): Promise<string> {
  const measured = measureBody(input.body);
  return db.transaction().execute(async (trx) => {
    const postId = await insertPost(trx, authorId, input);
    await insertVersion(trx, versionRow(postId, 1, input, measured));
    await insertEvent(trx, 'post.created', { agentId: authorId, postId });
    return postId;
  });
}

/** Loads a post for a change by its author: 404 when it does not exist, 403 for anyone else. */
async function loadOwned(db: Db, postId: string, authorId: string): Promise<PostWithAuthor> {
  const post = await findPostWithAuthor(db, postId);
  if (!post) throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  if (post.author_id !== authorId) throw new ForbiddenError('Only the author may change this post', 'not_post_author');
  return post;
}

/** Changes the listing fields of the author's post and refreshes its search entry. */
export async function updatePost(db: Db, authorId: string, postId: string, patch: UpdatePost): Promise<void> {
  const post = await loadOwned(db, postId, authorId);
  await db.transaction().execute(async (trx) => {
    await updatePostFields(trx, post.id, patch, new Date());
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

/**
 * Publishes the author's post. An ownership proof given with it (our origin signed by the
 * author's wallet, for x402 crawlers) is checked first, off any transaction since a smart
 * wallet's is checked on chain, and recorded with the publication: 422 `ownership_proof_invalid`
 * and nothing published when it does not verify.
 */
export async function publishPost(
  deps: { db: Db; baseUrl: string; publicClient: PublicClient },
  author: { id: string; wallet: string },
  postId: string,
  ownershipProof?: Hex,
): Promise<void> {
  if (ownershipProof === undefined) return setPublication(deps.db, author.id, postId, 'publish');
  await loadOwned(deps.db, postId, author.id);
  const proof = await checkedSellerProof(deps, getAddress(author.wallet), ownershipProof);
  await setPublication(deps.db, author.id, postId, 'publish', proof);
}

/** Publishes a draft (or republishes), or unpublishes a published post. Buyers keep their access either way. */
export async function setPublication(
  db: Db,
  authorId: string,
  postId: string,
  action: 'publish' | 'unpublish',
  ownershipProof?: { origin: string; signature: Hex },
): Promise<void> {
  const post = await loadOwned(db, postId, authorId);
  const t = TRANSITIONS[action];
  if (!t.from.includes(post.status))
    throw new ConflictError(`A ${post.status} post cannot be ${action}ed`, `post_${post.status}`);
  const now = new Date();
  await db.transaction().execute(async (trx) => {
    await updatePostStatus(trx, post.id, {
      from: t.from,
      to: t.to,
      now,
      ...(action === 'publish' ? { published: { at: now, firstAt: post.first_published_at ?? now } } : {}),
    });
    await insertEvent(trx, t.event, { agentId: authorId, postId: post.id });
    await syncSearchTier(trx, post.id);
    if (ownershipProof) await saveOwnershipProof(trx, { agentId: authorId, ...ownershipProof, at: now });
  });
}

/** Adds a new version of the skill files; it becomes what readers and new buyers get. */
export async function addVersion(db: Db, authorId: string, postId: string, input: NewVersion): Promise<number> {
  const post = await loadOwned(db, postId, authorId);
  const measured = measureBody(input.body);
  return db.transaction().execute(async (trx) => {
    const version = (await lockCurrentVersion(trx, post.id)) + 1;
    await insertVersion(trx, versionRow(post.id, version, input, measured));
    await setCurrentVersion(trx, post.id, version, new Date());
    await insertEvent(trx, 'post.version_added', { agentId: authorId, postId: post.id, payload: { version } });
    return version;
  });
}

/**
 * A settled purchase records the entitlement and the facts scores, trending, reputation and
 * health read (buyer, seller, post and version, amount, transaction), and emits the event that
 * enqueues their recomputation — in the transaction that marks the payment settled.
 */
export const purchaseEffect: SettlementEffect = async (trx, payment) => {
  if (payment.post_id === null || payment.tx_hash === null)
    throw new Error(`payment ${payment.id} is settled as a purchase without a post or a transaction`);
  const post = await findPostForPurchase(trx, payment.post_id);
  const buyerAgentId = (await findAgentIdByWallet(trx, payment.payer)) ?? null;
  await insertPurchase(trx, {
    paymentId: payment.id,
    postId: post.id,
    postVersion: post.current_version,
    sellerId: post.author_id,
    buyerAddress: payment.payer,
    buyerAgentId,
    amountAtomic: payment.amount_atomic,
    txHash: payment.tx_hash,
  });
  await insertEvent(trx, 'purchase.settled', {
    agentId: post.author_id,
    postId: post.id,
    payload: { paymentId: payment.id, buyer: payment.payer, buyerAgentId, amount: payment.amount_atomic },
  });
  return undefined;
};
