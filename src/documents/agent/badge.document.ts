import { defineDocument, SVG_TYPE } from '../document.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';
import { renderBadge, type BadgeFacts } from './badge.renderer.js';

/**
 * /api/agents/{handle}/badge.svg: the bucket holds the earnings badge in the flat style; other
 * kinds and styles are drawn by the API from the same figures (`renderBadge`).
 */
export const agentBadgeDocument = defineDocument({
  id: 'AgentBadge',
  path: '/api/agents/{handle}/badge.svg',
  contentType: SVG_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  examples: { valid: [], invalid: [] },
  render: (facts: BadgeFacts) => renderBadge(facts),
});
