import type { AnyPublishedDocument } from './document.js';
import { agentCardDocument } from './agent/agent-card.document.js';
import { agentBadgeDocument } from './agent/badge.document.js';
import { agentBestPracticesDocument } from './agent/best-practices.document.js';
import { agentEmbedCardDocument } from './agent/embed-card.document.js';
import { agentHealthDocument } from './agent/health.document.js';
import { agentIdentityDocument } from './agent/identity.document.js';
import { agentReputationDocument } from './agent/reputation.document.js';
import { agentRatingDocument } from './agent/rating.document.js';
import { agentScoreDocument } from './agent/score.document.js';
import { agentSimilarDocument } from './agent/similar.document.js';
import { agentFeedDocument, postFeedDocument } from './discovery/feeds.document.js';
import { categoriesDocument, tagsDocument, trendingDocument } from './discovery/rankings.document.js';
import { postManifestDocument } from './posts/post-manifest.document.js';
import { skillAuditDocument } from './posts/skill-audit.document.js';
import { skillReviewsDocument } from './posts/skill-reviews.document.js';
import { agentPageDocument, homePageDocument, skillPageDocument } from './pages/pages.document.js';
import { siteAgentCardDocument } from './site/site-agent-card.document.js';
import { skillsIndexDocument, skillsIndexShardDocument } from './skills/skills-index.document.js';
import { skillArchiveDocument } from './skills/skill-archive.document.js';
import { skillSnapshotDocument } from './skills/skill-versions.document.js';
import {
  bestPracticesSpecDocument,
  crawlSpecDocument,
  installExtensionSpecDocument,
  scoreSpecDocument,
} from './site/specs.document.js';

export { JSON_TYPE } from './document.js';

/**
 * The per-agent documents, by file name under /api/agents/{handle}/: what the agent recompute
 * publishes and the API's per-agent routes answer.
 */
export const AGENT_DOCUMENTS = {
  'score.json': agentScoreDocument,
  'best-practices.json': agentBestPracticesDocument,
  'health.json': agentHealthDocument,
  'agent-card.json': agentCardDocument,
  identity: agentIdentityDocument,
  card: agentEmbedCardDocument,
  'badge.svg': agentBadgeDocument,
  'similar.json': agentSimilarDocument,
  'reputation.json': agentReputationDocument,
  'rating.json': agentRatingDocument,
} as const;
export type AgentDocumentName = keyof typeof AGENT_DOCUMENTS;
export const AGENT_DOCUMENT_NAMES = Object.keys(AGENT_DOCUMENTS) as AgentDocumentName[];

/** The bucket key of one of an agent's documents. */
export const agentDocumentKey = (handle: string, name: AgentDocumentName) => AGENT_DOCUMENTS[name].key({ handle });

/** The site-level documents the site-card job publishes. */
export const SITE_DOCUMENTS = [
  siteAgentCardDocument,
  crawlSpecDocument,
  scoreSpecDocument,
  bestPracticesSpecDocument,
  installExtensionSpecDocument,
] as const;

/** The default forms of the discovery documents (no query string). */
export const DISCOVERY_DOCUMENTS = [
  agentFeedDocument,
  postFeedDocument,
  trendingDocument,
  tagsDocument,
  categoriesDocument,
] as const;

/**
 * The pages for people (HTML, no script): the agent's page is published with the agent's
 * documents, the skill's with its manifest, the home page with the discovery documents.
 */
export const PAGE_DOCUMENTS = [homePageDocument, agentPageDocument, skillPageDocument] as const;

/**
 * Every document the workers publish to the bucket. A document's object key is its public path
 * without the leading slash, so a CDN in front of the bucket serves it at that path; the one
 * exception is a path with no name of its own (`/`), whose module names its key (`objectKey`).
 * The edge (src/api/middleware/edge.ts and infra/edge/edge.conf), the API's fallback routes and
 * the OpenAPI response schemas of those routes all follow this list.
 */
export const CATALOGUE: readonly AnyPublishedDocument[] = [
  ...SITE_DOCUMENTS,
  skillsIndexDocument,
  skillsIndexShardDocument,
  skillArchiveDocument,
  skillSnapshotDocument,
  postManifestDocument,
  skillAuditDocument,
  skillReviewsDocument,
  ...Object.values(AGENT_DOCUMENTS),
  ...DISCOVERY_DOCUMENTS,
  agentPageDocument,
  skillPageDocument,
  homePageDocument,
];

/** The documents at exactly one path stored under a key of their own (`/` is `index.html`). */
export const EXACT_PATH_DOCUMENTS = CATALOGUE.filter((d) => d.objectKey !== undefined);
/** The documents whose key is their path: one alternative each of the edge's regular expression. */
export const PATH_KEYED_DOCUMENTS = CATALOGUE.filter((d) => d.objectKey === undefined);

/**
 * The regular expression of every path-keyed catalogued path, as the edge's nginx `location`
 * writes it (infra/edge/edge.conf must carry exactly this, and one exact `location = <path>` per
 * entry of EXACT_PATH_DOCUMENTS; test/contract/edge-catalogue.test.ts checks both).
 */
export const STATIC_PATHS_PATTERN = `^/(${PATH_KEYED_DOCUMENTS.map((d) => d.pattern).join('|')})$`;
const STATIC_PATHS = new RegExp(STATIC_PATHS_PATTERN);

const exactAt = (path: string) => EXACT_PATH_DOCUMENTS.find((d) => d.path === path);

/** Whether a public path is a bucket object when requested without a query string. */
export const isStaticPath = (path: string) => STATIC_PATHS.test(path) || exactAt(path) !== undefined;

/** The catalogue entry a public path is an instance of, if any. */
export const documentAtPath = (path: string): AnyPublishedDocument | undefined =>
  STATIC_PATHS.test(path) ? PATH_KEYED_DOCUMENTS.find((d) => d.matches(path)) : exactAt(path);

/** The catalogue entry of a path template (OpenAPI syntax, e.g. `/api/agents/{handle}/score.json`). */
export const documentAtTemplate = (template: string): AnyPublishedDocument | undefined =>
  CATALOGUE.find((d) => d.path === template);

/** The bucket key of a public path: the path without its leading slash (or the key its module names). */
export const keyOfPath = (path: string) => exactAt(path)?.key() ?? path.replace(/^\/+/, '');
