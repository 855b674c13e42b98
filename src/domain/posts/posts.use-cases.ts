import { getAddress, type Hex, type PublicClient } from 'viem';
import type { Db, Executor } from '../../data/db.js';
import type { Payment, PostStatus } from '../../data/schema.js';
import type { SettledFields } from '../../data/payments.repository.js';
import { coalesced } from '../../platform/coalesce.js';
import {
  findPostWithAuthor,
  findVersion,
  insertPost,
  insertVersion,
  lockCurrentVersion,
  lockPostFirst,
  setCurrentVersion,
  settlePurchases,
  setVersionSignature,
  updatePostFields,
  updatePostStatus,
  type PostWithAuthor,
  type VersionSignatureRow,
} from '../../data/posts.repository.js';
import { insertEvent } from '../../data/events.repository.js';
import { isSuspended } from '../../data/moderation.repository.js';
import { saveOwnershipProof } from '../../data/discovery.repository.js';
import { ConflictError, DependencyUnavailableError, ForbiddenError, NotFoundError } from '../../platform/errors.js';
import { SETTLEABLE, type SettlementEffect } from '../payments/ledger/settlement.js';
import { syncSearchTier } from '../discovery/search-tier.js';
import { checkedSellerProof } from '../discovery/ownership-proofs.js';
import { AgentSkillInvalidError } from '../skills/agent-skill.js';
import { prepareFiles, versionRow } from './post-files.js';
import { versionIntegrity } from '../skills/integrity.js';
import { checkedVersionSignature } from '../skills/version-signing.js';
import type { VersionIntegrity } from '../../documents/post.renderer.js';
import { assertPriceAllowed, type CreatePost, type NewVersion, type UpdatePost } from './post.schemas.js';

/** Who checks a seller's signature of a version: the chain, for a smart-contract wallet. */
export interface SigningDeps {
  db: Db;
  publicClient?: PublicClient;
}

/**
 * Creates a draft (version 1). Only its author sees it until it is published. Its SKILL.md
 * `name` is the skill's name for good: 409 `skill_name_taken` when the author already has it.
 * A paid price below `minPriceAtomic` is refused: 422 `price_below_minimum`.
 */
export async function createPost(db: Db, authorId: string, input: CreatePost, minPriceAtomic: bigint): Promise<string> {
  assertPriceAllowed(input.priceAtomic, minPriceAtomic);
  await assertNotSuspended(db, authorId);
  const files = prepareFiles(input.body);
  return db.transaction().execute(async (trx) => {
    const postId = await insertPost(trx, authorId, { ...input, skillName: files.name });
    if (!postId)
      throw new ConflictError(
        `You already have a skill named "${files.name}"; give this one another SKILL.md name or add a version to that one`,
        'skill_name_taken',
      );
    await insertVersion(trx, versionRow(postId, 1, input, files));
    await insertEvent(trx, 'post.created', { agentId: authorId, postId });
    return postId;
  });
}

/** A suspended agent publishes and changes nothing (403 `agent_suspended`); it may still appeal. */
async function assertNotSuspended(db: Db, agentId: string): Promise<void> {
  if (await isSuspended(db, agentId))
    throw new ForbiddenError('This agent is suspended: it cannot publish or change skills', 'agent_suspended');
}

/**
 * Loads a post for a change by its author: 404 when it does not exist, 403 for anyone else, 403
 * `agent_suspended` for a suspended author, 409 `post_removed` for a skill an operator took down
 * (its tombstone stays as the operator left it).
 */
async function loadOwned(db: Db, postId: string, authorId: string): Promise<PostWithAuthor> {
  const post = await findPostWithAuthor(db, postId);
  if (!post) throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  if (post.author_id !== authorId) throw new ForbiddenError('Only the author may change this post', 'not_post_author');
  await assertNotSuspended(db, authorId);
  if (post.status === 'removed')
    throw new ConflictError('This skill was taken down: it cannot be changed (appeal instead)', 'post_removed');
  return post;
}

/**
 * Changes the listing fields of the author's post and refreshes its search entry. A new paid
 * price below `minPriceAtomic` is refused: 422 `price_below_minimum`, nothing changed.
 */
export async function updatePost(
  db: Db,
  authorId: string,
  postId: string,
  patch: UpdatePost,
  minPriceAtomic: bigint,
): Promise<void> {
  assertPriceAllowed(patch.priceAtomic, minPriceAtomic);
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
 * author's wallet, for x402 crawlers) and the seller's signature of the current version are
 * checked first, off any transaction since a smart wallet's are checked on chain, and recorded
 * with the publication: 422 `ownership_proof_invalid` or `version_signature_invalid` and
 * nothing published when one does not verify.
 */
export async function publishPost(
  deps: { db: Db; baseUrl: string; publicClient: PublicClient },
  author: { id: string; wallet: string },
  postId: string,
  given: { ownershipProof?: Hex; versionSignature?: Hex } = {},
): Promise<void> {
  if (given.ownershipProof === undefined && given.versionSignature === undefined)
    return setPublication(deps.db, author.id, postId, 'publish');
  const post = await loadOwned(deps.db, postId, author.id);
  const proof =
    given.ownershipProof && (await checkedSellerProof(deps, getAddress(author.wallet), given.ownershipProof));
  let signed: SignedVersion | undefined;
  if (given.versionSignature) {
    const v = await findVersion(deps.db, post.id, post.current_version);
    const statement = { postId: post.id, version: v.version, name: v.skill_name, digest: v.skill_digest };
    const row = await checkedVersionSignature(
      deps.publicClient,
      post.author_wallet,
      statement,
      given.versionSignature,
      new Date(),
    );
    signed = { version: v.version, ...row };
  }
  await setPublication(deps.db, author.id, postId, 'publish', proof || undefined, signed);
}

type SignedVersion = VersionSignatureRow & { version: number };

/** Stores a checked signature; the same signature again is a no-op, another one 409 `version_already_signed`. */
async function storeSignature(trx: Executor, postId: string, signed: SignedVersion): Promise<boolean> {
  // The skill first, then its version: the one lock order of every writer of a version.
  await lockPostFirst(trx, postId);
  if (await setVersionSignature(trx, postId, signed.version, signed)) return true;
  const stored = await findVersion(trx, postId, signed.version);
  if (stored.signature === signed.signature.toLowerCase()) return false;
  throw new ConflictError(
    `Version ${signed.version} is already signed; a version's signature never changes`,
    'version_already_signed',
  );
}

/**
 * Records the seller's signature of one version of its post, after publication (or for a
 * version published unsigned): 404 `version_not_found`, 422 `version_signature_invalid` for a
 * signature that is not the seller wallet's over that version, 409 `version_already_signed`.
 */
export async function signVersion(
  deps: SigningDeps,
  authorId: string,
  postId: string,
  version: number,
  signature: Hex,
): Promise<VersionIntegrity> {
  const post = await loadOwned(deps.db, postId, authorId);
  if (!Number.isSafeInteger(version) || version < 1 || version > post.current_version)
    throw new NotFoundError(`Version ${version} of post ${postId}`, 'version_not_found');
  const v = await findVersion(deps.db, post.id, version);
  const statement = { postId: post.id, version, name: v.skill_name, digest: v.skill_digest };
  const row = await checkedVersionSignature(deps.publicClient, post.author_wallet, statement, signature, new Date());
  await deps.db.transaction().execute(async (trx) => {
    if (await storeSignature(trx, post.id, { version, ...row }))
      await insertEvent(trx, 'post.version_signed', { agentId: authorId, postId: post.id, payload: { version } });
  });
  return versionIntegrity(post.id, await findVersion(deps.db, post.id, version));
}

/** Publishes a draft (or republishes), or unpublishes a published post. Buyers keep their access either way. */
export async function setPublication(
  db: Db,
  authorId: string,
  postId: string,
  action: 'publish' | 'unpublish',
  ownershipProof?: { origin: string; signature: Hex },
  signed?: SignedVersion,
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
    if (signed) await storeSignature(trx, post.id, signed);
  });
}

/**
 * Adds a new version of the skill files; it becomes what readers and new buyers get. It keeps
 * the skill's name (422 `agent_skill_invalid`, rule `unchanged`, otherwise). A signature given
 * with it is over the next version number: 409 `version_conflict` if another version got it first.
 */
export async function addVersion(
  deps: SigningDeps,
  authorId: string,
  postId: string,
  input: NewVersion,
): Promise<number> {
  const post = await loadOwned(deps.db, postId, authorId);
  const files = prepareFiles(input.body);
  if (files.name !== post.skill_name)
    throw new AgentSkillInvalidError('agent_skill_invalid', 'The files are not a version of this skill', [
      {
        field: 'frontmatter.name',
        rule: 'unchanged',
        message: `this skill is named "${post.skill_name}"; every version keeps that name`,
      },
    ]);
  const expected = post.current_version + 1;
  const statement = { postId: post.id, version: expected, name: files.name, digest: files.skillDigest };
  const signed = input.versionSignature
    ? await checkedVersionSignature(
        deps.publicClient,
        post.author_wallet,
        statement,
        input.versionSignature as Hex,
        new Date(),
      )
    : undefined;
  return deps.db.transaction().execute(async (trx) => {
    const version = (await lockCurrentVersion(trx, post.id)) + 1;
    if (signed && version !== expected)
      throw new ConflictError(`Version ${expected} was added meanwhile; sign version ${version}`, 'version_conflict');
    await insertVersion(trx, versionRow(post.id, version, input, files, signed));
    await setCurrentVersion(trx, post.id, version, new Date());
    await insertEvent(trx, 'post.version_added', { agentId: authorId, postId: post.id, payload: { version } });
    return version;
  });
}

/**
 * A settled purchase records the entitlement and the facts scores, trending, reputation and
 * health read (buyer, seller, post and version, amount, transaction), and emits the event that
 * enqueues their recomputation: in the one statement that marks the payment settled.
 */
export const purchaseEffect: SettlementEffect = {
  async settle(db, fields) {
    let settle = purchaseSettlers.get(db);
    if (!settle) {
      settle = coalesced((list: SettledFields[]) => settleTogether(db, list));
      purchaseSettlers.set(db, settle);
    }
    const outcome = await settle(fields);
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  },
};

type Outcome = { value: Payment | undefined } | { error: unknown };

/** Per database, the purchases settled in one turn of the event loop go in one statement. */
const purchaseSettlers = new WeakMap<Db, (fields: SettledFields) => Promise<Outcome>>();

/**
 * Settles the purchases of one turn together; if that statement fails for a reason other than
 * the database being unreachable (a deadlock with the retry job settling one of them, say), each
 * is settled alone, so one payment's trouble is not every buyer's.
 */
async function settleTogether(db: Db, list: SettledFields[]): Promise<Outcome[]> {
  const answers = (rows: Payment[], of: SettledFields[]) => {
    const byId = new Map(rows.map((p) => [p.id, p]));
    return of.map((f) => ({ value: byId.get(f.id) }));
  };
  try {
    return answers(await settlePurchases(db, list, SETTLEABLE), list);
  } catch (err) {
    if (list.length === 1 || err instanceof DependencyUnavailableError) return list.map(() => ({ error: err }));
    return Promise.all(
      list.map(async (f): Promise<Outcome> => {
        try {
          return answers(await settlePurchases(db, [f], SETTLEABLE), [f])[0] ?? { value: undefined };
        } catch (error) {
          return { error };
        }
      }),
    );
  }
}
