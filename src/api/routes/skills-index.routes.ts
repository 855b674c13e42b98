import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { jsonBytes } from '../../documents/document.js';
import { skillsIndexDocument, skillsIndexShardDocument } from '../../documents/skills/skills-index.document.js';
import { skillsIndex, skillsIndexShard } from '../../domain/projections/skills-index.js';
import { SKILLS_INDEX_SHARDS } from '../../documents/skills/skills-index.renderer.js';
import { memoizeFor } from '../../platform/memoize.js';
import { AppError, NotFoundError } from '../../platform/errors.js';
import { findPostWithAuthor } from '../../data/posts.repository.js';
import { skillArchiveDocument } from '../../documents/skills/skill-archive.document.js';
import { archiveDigests, archiveKey, archiveRef, buildArchive } from '../../domain/skills/skill-archives.js';
import { artifactDigest } from '../../domain/skills/skill-archive.js';
import { latestSkillSnapshot, skillSnapshot, skillVersions } from '../../domain/skills/skill-snapshots.js';
import { skillSnapshotDocument } from '../../documents/skills/skill-versions.document.js';

const SkillParams = z.object({ postId: z.string().describe('the skill (post) id') });
const SnapshotParams = SkillParams.extend({
  version: z.string().describe('n of `v{n}.0.0`: the version number'),
});

/** Any segment: a path that names no archive (not a post id, not a version number) is 404, not 400. */
const ArchiveParams = z.object({
  postId: z.string().describe('the skill (post) id'),
  version: z.string().describe('the version number, 1, 2, …'),
});

/** A shard's name: two lower-case hex digits (a path of another form is the unknown-route 404). */
const ShardParams = z.object({
  shard: z
    .string()
    .regex(/^[0-9a-f]{2}$/)
    .describe('two lower-case hex digits, 00 to ff: the first two of the ids of the skills it lists'),
});

/**
 * The Agent Skills discovery index is a bucket object the workers publish; this route answers the
 * same path, rendered from the database, when the bucket has not got it or no edge is in front.
 */
export const skillsIndexRoutes = (deps: ApiDeps) => {
  const ctx = { site: deps.site, chain: deps.chain };
  // A bucket miss renders from the database, and a query string or an Authorization header gets
  // past the edge's cache: each process renders a shard at most once per its cache lifetime, and
  // the index (which counts every published skill) at most once in 2 s, whatever crawlers send.
  const index = memoizeFor(2_000, async () => jsonBytes(await skillsIndex(deps.db, ctx, { store: deps.store })));
  const shards = new Map(
    SKILLS_INDEX_SHARDS.map((shard) => [
      shard,
      memoizeFor(30_000, async () => jsonBytes(await skillsIndexShard(deps.db, ctx, shard))),
    ]),
  );
  return [
    defineRoute({
      method: 'get',
      path: skillsIndexDocument.path,
      operationId: 'getAgentSkillsIndex',
      summary:
        'Agent Skills discovery index: the most bought skills with their versions, digests, price and signature, the count and every shard',
      description:
        'cloudflare/agent-skills-discovery-rfc v0.2.0 (name, description, digest, files) plus the marketplace members: ' +
        'post id, version, seller, price, links, the seller signature and every version. `total` counts the published ' +
        'skills; `shards` links the 256 shards that list every one of them (docs/skills.md).',
      tags: ['discovery'],
      staticDocument: true,
      responses: { 200: { description: 'The index' } },
      handler: async ({ req, res }) => {
        sendCacheable(req, res, {
          body: await index(),
          contentType: skillsIndexDocument.contentType,
          cacheControl: skillsIndexDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/agent-skills/shards/:shard.json',
      operationId: 'getAgentSkillsIndexShard',
      summary:
        'One shard of the Agent Skills discovery index: every published skill whose id starts with its two hex digits',
      description: 'The same form as the index, with `shard`; the index links all 256 (docs/skills.md).',
      tags: ['discovery'],
      staticDocument: true,
      params: ShardParams,
      responses: { 200: { description: 'The shard' } },
      handler: async ({ req, res, params }) => {
        const render = shards.get(params.shard);
        if (!render) throw new Error(`no shard ${params.shard}`);
        sendCacheable(req, res, {
          body: await render(),
          contentType: skillsIndexShardDocument.contentType,
          cacheControl: skillsIndexShardDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/agent-skills/archives/:postId/:version.tar.gz',
      operationId: 'getAgentSkillArchive',
      summary: "A skill version's archive: the deterministic tar.gz the discovery index names (type archive)",
      description:
        'The same bytes every time (sorted entries, fixed modes, owners and times, gzip without a time): its ' +
        "SHA-256 is the index entry's `digest` and `package.digest`. Published once per version, cached as " +
        'long as a manifest (a take-down reaches caches as fast). A paid skill answers 402 `payment_required`: its files are bought through the full view ' +
        '(docs/skills.md). An unpublished skill or an unknown version is 404 `archive_not_found`.',
      tags: ['discovery'],
      staticDocument: true,
      params: ArchiveParams,
      responses: {
        200: { description: 'The archive (application/gzip)' },
        402: { description: 'A paid skill: buy it through its full view' },
        404: { description: 'No such published skill or version' },
      },
      handler: async ({ req, res, params }) => {
        const version = /^[1-9][0-9]{0,8}$/.test(params.version) ? Number(params.version) : 0;
        const post = await findPostWithAuthor(deps.db, params.postId);
        if (post?.status !== 'published' || version < 1 || version > post.current_version)
          throw new NotFoundError('the archive', 'archive_not_found');
        const free = BigInt(post.price_atomic) === 0n;
        if (!free)
          throw new AppError(
            402,
            'payment_required',
            `the archive of a paid skill is not public: buy it at ${deps.site.baseUrl}/api/posts/${post.id}?view=full`,
          );
        const ref = { postId: post.id, version, free };
        const digests = await archiveDigests({ db: deps.db, store: deps.store }, [ref]);
        const digest = digests.get(archiveRef(ref.postId, ref.version));
        // The published copy, read back: a request that gets past the edge's cache costs one bucket
        // read, not a build. Only a copy missing from the bucket is built again, and served only if
        // it has the published digest (the archive's identity).
        const stored = await deps.store.get(archiveKey(ref));
        const built = stored
          ? { bytes: stored.body, digest: artifactDigest(stored.body) }
          : await buildArchive(deps.db, ref);
        if (built.digest !== digest)
          throw new Error(`archive ${post.id}/${version} does not match its published digest`);
        sendCacheable(req, res, {
          body: built.bytes,
          contentType: skillArchiveDocument.contentType,
          cacheControl: skillArchiveDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/agent-skills/skills/:postId/index.json',
      operationId: 'getAgentSkillLatest',
      summary: "A skill's own discovery index: the snapshot of its current version (mutable)",
      description:
        "The canonical index of the skill's discovery root (PR #380): the same document as " +
        '`v{n}.0.0/index.json` for the current version n, changing when the seller adds a version. ' +
        '404 `skill_not_found` for a skill not published.',
      tags: ['discovery'],
      params: SkillParams,
      responses: { 200: { description: 'The index of one skill' }, 404: { description: 'No such published skill' } },
      handler: async ({ req, res, params }) => {
        sendCacheable(req, res, {
          body: await latestSkillSnapshot(
            { db: deps.db, store: deps.store, baseUrl: deps.site.baseUrl },
            params.postId,
          ),
          contentType: skillSnapshotDocument.contentType,
          cacheControl: skillsIndexDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/agent-skills/skills/:postId/versions.json',
      operationId: 'getAgentSkillVersions',
      summary: "A skill's versions as the discovery draft's versions.json: {latest, versions}",
      description:
        'agentskills/agentskills PR #380 per skill: version n is `n.0.0`, oldest first; each has an immutable ' +
        'snapshot at `v{n}.0.0/index.json` beside this file. 404 `skill_not_found` for a skill not published.',
      tags: ['discovery'],
      params: SkillParams,
      responses: { 200: { description: 'The versions' }, 404: { description: 'No such published skill' } },
      handler: async ({ req, res, params }) => {
        sendCacheable(req, res, {
          body: jsonBytes(await skillVersions(deps.db, params.postId)),
          contentType: skillSnapshotDocument.contentType,
          cacheControl: skillsIndexDocument.cacheControl,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/agent-skills/skills/:postId/v:version.0.0/index.json',
      operationId: 'getAgentSkillSnapshot',
      summary: 'An immutable discovery index of one version of one skill (both formats)',
      description:
        'The skill as version n was published: name, description, per-file and skill digests, its archive. ' +
        'Published to the bucket on first request and never rewritten. 404 `snapshot_not_found` for a version ' +
        'the skill does not have, `skill_not_found` for a skill not published.',
      tags: ['discovery'],
      staticDocument: true,
      params: SnapshotParams,
      responses: { 200: { description: 'The snapshot' }, 404: { description: 'No such skill or version' } },
      handler: async ({ req, res, params }) => {
        const n = /^[1-9][0-9]{0,8}$/.exec(params.version)?.[0];
        if (n === undefined) throw new NotFoundError(`the snapshot v${params.version}.0.0`, 'snapshot_not_found');
        const body = await skillSnapshot(
          { db: deps.db, store: deps.store, baseUrl: deps.site.baseUrl },
          params.postId,
          Number(n),
        );
        sendCacheable(req, res, {
          body,
          contentType: skillSnapshotDocument.contentType,
          cacheControl: skillSnapshotDocument.cacheControl,
        });
      },
    }),
  ];
};
