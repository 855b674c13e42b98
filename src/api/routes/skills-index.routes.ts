import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { jsonBytes } from '../../documents/document.js';
import { skillsIndexDocument, skillsIndexShardDocument } from '../../documents/skills/skills-index.document.js';
import { skillsIndex, skillsIndexShard } from '../../domain/projections/skills-index.js';
import { SKILLS_INDEX_SHARDS } from '../../documents/skills/skills-index.renderer.js';
import { memoizeFor } from '../../platform/memoize.js';

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
  const index = memoizeFor(2_000, async () => jsonBytes(await skillsIndex(deps.db, ctx)));
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
  ];
};
