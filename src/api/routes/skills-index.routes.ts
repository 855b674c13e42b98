import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { jsonBytes } from '../../documents/document.js';
import { skillsIndexDocument } from '../../documents/skills/skills-index.document.js';
import { skillsIndex } from '../../domain/projections/skills-index.js';

/**
 * The Agent Skills discovery index is a bucket object the workers publish; this route answers the
 * same path, rendered from the database, when the bucket has not got it or no edge is in front.
 */
export const skillsIndexRoutes = (deps: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: skillsIndexDocument.path,
    operationId: 'getAgentSkillsIndex',
    summary: 'Agent Skills discovery index: every published skill with its versions, digests, price and signature',
    description:
      'cloudflare/agent-skills-discovery-rfc v0.2.0 (name, description, digest, files) plus the marketplace members: ' +
      'post id, version, seller, price, links, the seller signature and every version.',
    tags: ['discovery'],
    staticDocument: true,
    responses: { 200: { description: 'The index' } },
    handler: async ({ req, res }) => {
      const doc = await skillsIndex(deps.db, { site: deps.site, chain: deps.chain });
      sendCacheable(req, res, {
        body: jsonBytes(doc),
        contentType: skillsIndexDocument.contentType,
        cacheControl: skillsIndexDocument.cacheControl,
      });
    },
  }),
];
