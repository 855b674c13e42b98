import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { paymentOf, sendPaywallOutcome, siwxProofOf } from '../http/x402.js';
import { authenticate } from '../middleware/auth.js';
import { dynamicPrice, PAID_HEADERS, usd, X402_RESPONSES } from './x402-responses.js';
import { postManifestDocument } from '../../documents/posts/post-manifest.document.js';
import { renderPostManifest } from '../../documents/post-manifest.renderer.js';
import { jsonBytes } from '../../domain/publishing/publish-document.js';
import {
  CreatePost,
  MAX_PRICE_ATOMIC,
  NewVersion,
  UpdatePost,
  VersionSignature,
} from '../../domain/posts/post.schemas.js';
import {
  addVersion,
  createPost,
  publishPost,
  setPublication,
  signVersion,
  updatePost,
} from '../../domain/posts/posts.use-cases.js';
import { versionIntegrity } from '../../domain/skills/integrity.js';
import { Full, Integrity, Manifest, PostId, PostVersion, PublishBody, SKILL_422 } from './post-views.schemas.js';
import {
  readPost,
  readPublishedPost,
  readVersionAudit,
  type PostsDeps,
} from '../../domain/posts/post-reads.use-cases.js';
import { skillAuditDocument } from '../../documents/posts/skill-audit.document.js';
import type { PaywallTimings } from '../../domain/payments/paywall/paywall.js';
import { requestSource } from './analytics.routes.js';
import { countOutcome } from '../../domain/analytics/funnel-counters.js';

export const postRoutes = (deps: ApiDeps) => {
  const posts: PostsDeps = {
    db: deps.db,
    site: deps.site,
    chain: deps.chain,
    verifyMessage: (args) => deps.chain.publicClient.verifyMessage(args),
    chainChecks: deps.siwxChainChecks,
  };
  const authorOnly = { 403: { description: 'Not the author' }, 404: { description: 'No such post' } };
  const minPrice = deps.config.minPriceAtomic;
  const priceRule =
    `A paid skill costs at least ${minPrice} atomic USDC (${usd(minPrice)} USDC), at most 1,000 USDC; 0 is free. ` +
    'A lower non-zero price gets 422 price_below_minimum.';
  const respondWithPost = async (
    res: Parameters<Parameters<typeof defineRoute>[0]['handler']>[0]['res'],
    postId: string,
    viewer: ReturnType<typeof authenticate>,
    status: number,
  ) => {
    const read = await readPost(posts, postId, 'full', viewer);
    res
      .status(status)
      .set('Cache-Control', 'no-store')
      .json(read.kind === 'document' ? read.body : undefined);
  };
  return [
    defineRoute({
      method: 'post',
      path: '/api/posts',
      operationId: 'createPost',
      rateLimit: 'posting',
      summary: 'Create a skill post as a draft (version 1)',
      description: `The draft is visible only to its author until published. Files total at most 200,000 bytes (else 413). ${priceRule}`,
      tags: ['posts'],
      security: ['bearerJwt'],
      body: CreatePost,
      responses: {
        201: { description: 'The draft, in its full view', schema: Full, headers: { Location: 'URL of the post' } },
        409: { description: 'You already have a skill with this SKILL.md name (skill_name_taken)' },
        413: { description: 'Skill files too large' },
        422: { description: `${SKILL_422}; or a paid price below the minimum (price_below_minimum)` },
      },
      handler: async ({ body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        const id = await createPost(deps.db, viewer.sub, body, minPrice);
        res.set('Location', `/api/posts/${id}`);
        await respondWithPost(res, id, viewer, 201);
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/api/posts/:postId',
      operationId: 'updatePost',
      rateLimit: 'posting',
      summary: "Edit a post's title, preview, price, tags or categories (author only)",
      description: priceRule,
      tags: ['posts'],
      security: ['bearerJwt'],
      params: PostId,
      body: UpdatePost,
      responses: {
        200: { description: 'The updated post', schema: Full },
        422: { description: 'A paid price below the minimum (price_below_minimum); nothing changed' },
        ...authorOnly,
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        await updatePost(deps.db, viewer.sub, params.postId, body, minPrice);
        await respondWithPost(res, params.postId, viewer, 200);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/posts/:postId/publish',
      operationId: 'publishPost',
      rateLimit: 'posting',
      summary: 'Publish a draft (or republish an unpublished post)',
      description:
        'Optionally with `ownershipProof`: this origin (scheme://host[:port], no trailing slash) signed with personal_sign by your wallet. ' +
        'It is listed in /.well-known/x402 so x402 crawlers know the wallet your skills pay is yours; a signature that does not verify gets 422 ownership_proof_invalid and nothing is published. ' +
        "Optionally with `versionSignature`: your wallet's EIP-712 signature of the current version (docs/posts.md); one that is not your wallet's over this version gets 422 version_signature_invalid and nothing is published.",
      tags: ['posts'],
      security: ['bearerJwt'],
      params: PostId,
      body: PublishBody,
      responses: {
        200: { description: 'The post', schema: Full },
        409: { description: 'The post cannot be published in its state' },
        422: {
          description:
            'The ownership proof or the version signature does not verify (ownership_proof_invalid, version_signature_invalid)',
        },
        ...authorOnly,
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        await publishPost(
          { db: deps.db, baseUrl: deps.site.baseUrl, publicClient: deps.chain.publicClient },
          { id: viewer.sub, wallet: viewer.wallet },
          params.postId,
          {
            ownershipProof: body?.ownershipProof as `0x${string}` | undefined,
            versionSignature: body?.versionSignature as `0x${string}` | undefined,
          },
        );
        await respondWithPost(res, params.postId, viewer, 200);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/posts/:postId/unpublish',
      operationId: 'unpublishPost',
      rateLimit: 'posting',
      summary: 'Unpublish a post; its buyers keep their access',
      tags: ['posts'],
      security: ['bearerJwt'],
      params: PostId,
      responses: {
        200: { description: 'The post', schema: Full },
        409: { description: 'The post cannot be unpublished in its state' },
        ...authorOnly,
      },
      handler: async ({ params, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        await setPublication(deps.db, viewer.sub, params.postId, 'unpublish');
        await respondWithPost(res, params.postId, viewer, 200);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/posts/:postId/versions',
      operationId: 'addPostVersion',
      rateLimit: 'posting',
      summary: 'Add a new version of the skill files; readers and buyers get it from now on',
      description:
        'The files are an Agent Skill with the same SKILL.md name as the earlier versions. Optionally signed with `versionSignature` over the next version number.',
      tags: ['posts'],
      security: ['bearerJwt'],
      params: PostId,
      body: NewVersion,
      responses: {
        201: { description: 'The post at its new version', schema: Full },
        409: { description: 'Another version was added first (version_conflict)' },
        413: { description: 'Skill files too large' },
        422: { description: SKILL_422 },
        ...authorOnly,
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        await addVersion({ db: deps.db, publicClient: deps.chain.publicClient }, viewer.sub, params.postId, body);
        await respondWithPost(res, params.postId, viewer, 201);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/posts/:postId/versions/:version/signature',
      operationId: 'signPostVersion',
      rateLimit: 'posting',
      summary: "Add the seller's EIP-712 signature to a version (author only, once per version)",
      description:
        'The signature is the author wallet\'s EIP-712 signature of SkillVersion{postId, version, name, digest} in the domain {name: "Skill Market", version: "1"}, ' +
        "name and digest being the version's integrity.name and integrity.skillDigest. Signing again with the same signature changes nothing.",
      tags: ['posts'],
      security: ['bearerJwt'],
      params: PostVersion,
      body: z.object({ signature: VersionSignature }).strict(),
      responses: {
        200: { description: "The version's integrity, with its signature", schema: Integrity },
        409: { description: 'The version carries another signature (version_already_signed)' },
        422: { description: "Not the author wallet's signature over this version (version_signature_invalid)" },
        403: authorOnly[403],
        404: { description: 'No such post or version (post_not_found, version_not_found)' },
      },
      handler: async ({ params, body, req, res }) => {
        const viewer = authenticate(req, deps.jwt, true);
        const signing = { db: deps.db, publicClient: deps.chain.publicClient };
        const integrity = await signVersion(
          signing,
          viewer.sub,
          params.postId,
          params.version,
          body.signature as `0x${string}`,
        );
        res.status(200).set('Cache-Control', 'no-store').json(integrity);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/posts/:postId/manifest.json',
      operationId: 'getPostManifest',
      summary: 'Skill manifest: metadata and paywall information, no body',
      tags: ['posts'],
      staticDocument: true,
      params: PostId,
      responses: {
        200: { description: 'The manifest', schema: Manifest },
        404: { description: 'No published post with this id' },
      },
      handler: async ({ params, req, res }) => {
        const { post, version } = await readPublishedPost(deps.db, params.postId);
        deps.analytics.count(post.id, 'view', requestSource(deps, req));
        sendCacheable(req, res, {
          body: jsonBytes(renderPostManifest(post, version, posts, versionIntegrity(post.id, version))),
          contentType: postManifestDocument.contentType,
          cacheControl: postManifestDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/posts/:postId/versions/:version/audit.json',
      operationId: 'getVersionAudit',
      summary: "A version's static audit: verdict, counts and findings (file, line, quoted excerpt)",
      description:
        'The skill-audit job audits every version when it is created, never running its files (docs/audit.md). 404 audit_pending until it has.',
      tags: ['posts'],
      staticDocument: true,
      params: PostVersion,
      responses: {
        200: { description: 'The audit', schema: z.record(z.string(), z.unknown()) },
        404: {
          description:
            'No published post or version (post_not_found, version_not_found), or not audited yet (audit_pending)',
        },
        410: { description: 'The skill was taken down (post_removed)' },
      },
      handler: async ({ params, req, res }) => {
        const body = await readVersionAudit(deps.db, deps.site.baseUrl, params.postId, params.version);
        sendCacheable(req, res, {
          body: jsonBytes(body),
          contentType: skillAuditDocument.contentType,
          cacheControl: skillAuditDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/posts/:postId',
      operationId: 'getPost',
      // Counts only paid reads (a payment header, or view=full): preview reads by crawlers are not limited.
      rateLimit: 'paid',
      summary: 'A skill: view=preview (free, default) or view=full (x402 unless free, yours, or bought)',
      description:
        'view=full of a paid post answers 402 with x402 requirements paying the seller; pay with X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2). ' +
        'Buyers keep access: with their agent JWT (wallet = the paying wallet) or a Sign-In-With-X proof from the paying wallet (SIGN-IN-WITH-X header) later reads are free. The author always reads its own post. ' +
        'Drafts and unpublished posts are 404 for everyone else (buyers keep the full view of unpublished posts).',
      tags: ['posts'],
      security: ['x402', 'bearerJwt'],
      params: PostId,
      query: z.object({ view: z.enum(['preview', 'full']).default('preview') }),
      // Each skill sets its own price: from the minimum a paid skill may cost to the most.
      price: dynamicPrice(minPrice > 1n ? minPrice : 1n, MAX_PRICE_ATOMIC),
      // No paidProbe: only view=full is paid, so an unknown view is the reader's 400 (crawlers probe the
      // advertised URL, which carries view=full, and get the 402 from the handler).
      responses: {
        200: {
          description: 'The post in the requested view; a paid read carries the payment headers',
          schema: Full,
          headers: PAID_HEADERS,
        },
        404: { description: 'No such post (or not visible to you)' },
        ...X402_RESPONSES,
      },
      handler: async ({ params, query, req, res }) => {
        const started = performance.now();
        const viewer = authenticate(req, deps.jwt, false);
        const payment = paymentOf(req);
        const read = await readPost(posts, params.postId, query.view, viewer, {
          siwx: siwxProofOf(req, deps.config.x402Extensions),
          paying: payment !== undefined,
        });
        if (read.kind === 'refused') {
          sendPaywallOutcome(res, deps.paywall.refusal(read.resource, read.code, read.detail));
          return;
        }
        if (read.kind === 'document') {
          if (query.view === 'preview') deps.analytics.count(params.postId, 'view', requestSource(deps, req));
          if (read.cacheable) {
            sendCacheable(req, res, {
              body: jsonBytes(read.body),
              contentType: postManifestDocument.contentType,
              cacheControl: postManifestDocument.cacheControl,
            });
          } else {
            res.set('Cache-Control', 'private, no-store').json(read.body);
          }
          return;
        }
        const timings: PaywallTimings = { facilitatorMs: 0 };
        const outcome = await deps.paywall.process(payment, read.resource, timings);
        countOutcome(deps.analytics, params.postId, outcome, requestSource(deps, req));
        sendPaywallOutcome(res, outcome, timings, started);
      },
    }),
  ];
};
