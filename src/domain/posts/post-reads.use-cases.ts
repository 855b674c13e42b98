import type { Db } from '../../data/db.js';
import type { Payment } from '../../data/schema.js';
import {
  findPostWithAuthor,
  findPostWithCurrentVersion,
  findNewestSellableVersion,
  findVersion,
  hasEntitlement,
  type PostVersion,
  type PostWithAuthor,
} from '../../data/posts.repository.js';
import { fullView, previewView, type PostViewContext } from '../../documents/post.renderer.js';
import { ConflictError, GoneError, NotFoundError } from '../../platform/errors.js';
import { auditBlocksSale, skillAuditDocument, storedAudit } from '../../documents/posts/skill-audit.document.js';
import { findVersionToAudit } from '../../data/audits.repository.js';
import type { AgentClaims } from '../identity/jwt.js';
import { postListing } from '../payments/protocol/extensions/bazaar.js';
import type { PaidResource } from '../payments/paywall/paywall.js';
import { postPurchaseTerms, postResourceUrl } from './post-terms.js';
import {
  checkSiwx,
  consumeSiwx,
  type SiwxCheck,
  type SiwxDeps,
  type SiwxProof,
} from '../payments/paywall/sign-in-with-x.js';
import { versionIntegrity } from '../skills/integrity.js';
import { assertNotRefunded } from '../refunds/refunds.use-cases.js';

export interface PostsDeps extends PostViewContext {
  db: Db;
  /** Checks Sign-In-With-X proofs: the chain's signature verifier (smart wallets included). */
  verifyMessage: SiwxDeps['verifyMessage'];
  chainChecks: SiwxDeps['chainChecks'];
}

/** How a request for the full view proves a purchase without a JWT: its SIGN-IN-WITH-X header. */
export interface ReadAccess {
  siwx?: SiwxProof;
  /** The request carries a payment too: a proof that fails is ignored and the payment goes on. */
  paying: boolean;
}

/** What a buyer of a post is served once the payment settles: the post and its current version. */
type Purchased = { post: PostWithAuthor; version: PostVersion };

export type PostRead =
  | { kind: 'document'; body: ReturnType<typeof previewView> | ReturnType<typeof fullView>; cacheable: boolean }
  | { kind: 'purchase'; resource: PaidResource<Purchased> }
  /** A Sign-In-With-X proof refused: 402 with the challenge and the reason, nothing delivered. */
  | { kind: 'refused'; resource: PaidResource<Purchased>; code: string; detail: string };

/**
 * Who sees what: a published post's preview is public; drafts and unpublished posts exist only
 * for their author (and, for the full view, for buyers who keep their access). The full view is
 * free for free posts, for the author and for buyers (known by their JWT or by a Sign-In-With-X
 * proof from the paying wallet); everyone else must buy it.
 */
export async function readPost(
  deps: PostsDeps,
  postId: string,
  view: 'preview' | 'full',
  viewer: AgentClaims | undefined,
  access: ReadAccess = { paying: false },
): Promise<PostRead> {
  // The full view (and a purchase) serve the current version: read with the post, in one statement.
  const found =
    view === 'full'
      ? await findPostWithCurrentVersion(deps.db, postId)
      : await findPostWithAuthor(deps.db, postId).then((post) => post && { post, version: undefined });
  const notFound = () => new NotFoundError(`Post ${postId}`, 'post_not_found');
  if (!found) throw notFound();
  const { post } = found;
  const isAuthor = viewer?.sub === post.author_id;
  let isBuyer = viewer && !isAuthor ? await hasEntitlement(deps.db, post.id, viewer.wallet) : false;
  let refusal: { code: string; detail: string } | undefined;
  if (view === 'full' && access.siwx !== undefined && !isAuthor && !isBuyer) {
    const signedIn = await buyerBySiwx(deps, post, access.siwx);
    if (signedIn === true) isBuyer = true;
    else if (!access.paying) {
      if (signedIn.kind === 'malformed') throw signedIn.error;
      refusal = signedIn;
    }
  }
  if (post.status === 'removed' && !isAuthor) throw removed(post);
  if (post.status !== 'published' && !isAuthor && !(view === 'full' && isBuyer)) throw notFound();

  if (view === 'preview' || !found.version)
    return { kind: 'document', body: previewView(post, deps), cacheable: post.status === 'published' && !viewer };
  let { version } = found;
  const blocked =
    version.removal !== null || auditBlocksSale({ verdict: version.audit_verdict, override: version.audit_override });
  // A version that failed its audit (or was taken down) is neither sold nor served to buyers: they
  // keep the newest version that did not fail (what they bought); the author sees every version.
  if (blocked && !isAuthor) {
    const kept = isBuyer ? await findNewestSellableVersion(deps.db, post.id, version.version) : undefined;
    if (!kept)
      throw version.removal !== null
        ? new GoneError(`Version ${version.version} of post ${post.id} was taken down`, 'version_removed', {
            reason: (version.removal as { reason?: string }).reason ?? null,
          })
        : auditFailed(post.id, version.version);
    version = kept;
  }
  if (isAuthor || isBuyer || BigInt(post.price_atomic) === 0n) {
    return {
      kind: 'document',
      body: fullView(post, version, deps, versionIntegrity(post.id, version)),
      cacheable: BigInt(post.price_atomic) === 0n && post.status === 'published' && !viewer,
    };
  }
  const resource = purchaseResource(deps, { post, version });
  return refusal ? { kind: 'refused', resource, ...refusal } : { kind: 'purchase', resource };
}

/**
 * Whether a SIGN-IN-WITH-X proof comes from a wallet entitled to the post; its nonce is spent
 * only when it grants access. An entitlement covers the skill, not one version: every version,
 * current and future, even after the seller unpublishes it (docs/payments.md).
 */
async function buyerBySiwx(
  deps: PostsDeps,
  post: PostWithAuthor,
  header: SiwxProof,
): Promise<true | Exclude<SiwxCheck, { kind: 'proved' }>> {
  const siwx = {
    db: deps.db,
    chainId: deps.chain.chainId,
    verifyMessage: deps.verifyMessage,
    chainChecks: deps.chainChecks,
  };
  const proof = await checkSiwx(siwx, header, postResourceUrl(deps.site.baseUrl, post.id));
  if (proof.kind !== 'proved') return proof;
  if (!(await hasEntitlement(deps.db, post.id, proof.address))) {
    return {
      kind: 'refused',
      code: 'siwx_not_purchased',
      detail: `The wallet ${proof.address} has not bought this skill`,
    };
  }
  return (await consumeSiwx(deps.db, proof)) ?? true;
}

/** 410 for a skill an operator took down, with the reason code and time its tombstone carries. */
export function removed(post: { id: string; removal: Record<string, unknown> | null }): GoneError {
  const removal = post.removal as { reason?: string; at?: string; action?: string } | null;
  return new GoneError(`Post ${post.id} was taken down`, 'post_removed', {
    reason: removal?.reason ?? null,
    removedAt: removal?.at ?? null,
    action: removal?.action ?? null,
  });
}

/** 409 for a version whose audit failed: not sold until the seller publishes a fixed version. */
function auditFailed(postId: string, version: number): ConflictError {
  return new ConflictError(
    `Version ${version} of post ${postId} failed its audit (/api/posts/${postId}/versions/${version}/audit.json): it cannot be bought or served until the seller publishes a fixed version`,
    'skill_audit_failed',
  );
}

/** A published post and its current version (what its manifest states); 404 for any other post. */
export async function readPublishedPost(db: Db, postId: string): Promise<Purchased> {
  const post = await findPostWithAuthor(db, postId);
  if (post?.status === 'removed') throw removed(post);
  if (post?.status !== 'published') throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  return { post, version: await findVersion(db, post.id, post.current_version) };
}

/** A published skill's version audit as its audit.json renders it; 404 `audit_pending` before the audit. */
export async function readVersionAudit(db: Db, baseUrl: string, postId: string, version: number) {
  const { post } = await readPublishedPost(db, postId);
  if (version > post.current_version)
    throw new NotFoundError(`Version ${version} of post ${postId}`, 'version_not_found');
  const row = await findVersionToAudit(db, post.id, version);
  if (!row) throw new NotFoundError(`Version ${version} of post ${postId}`, 'version_not_found');
  const audit = storedAudit(row);
  if (!audit)
    throw new NotFoundError(`The audit of version ${version} (it runs within seconds of publication)`, 'audit_pending');
  return skillAuditDocument.render({ postId: post.id, version, skillDigest: row.skill_digest, audit, baseUrl });
}

function purchaseResource(deps: PostsDeps, sold: Purchased): PaidResource<Purchased> {
  const { post } = sold;
  return {
    purpose: 'purchase',
    postId: post.id,
    terms: postPurchaseTerms(deps, post),
    listing: () => postListing(post, deps),
    // The post and its current version as this request read them (published, at the price its
    // terms state): what is sold.
    sold,
    prepare: (payment) => assertNotRefunded(deps.db, payment).then(() => sold),
    recordAs: (prepared) => ({ postVersion: prepared.version.version }),
    render: async (_payment: Payment, prepared) =>
      fullView(prepared.post, prepared.version, deps, versionIntegrity(prepared.post.id, prepared.version)),
  };
}
