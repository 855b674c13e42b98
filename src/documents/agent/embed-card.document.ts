import type { Agent } from '../../data/schema.js';
import { defineDocument, HTML_TYPE } from '../document.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';
import { EMBED_CARD_CSP, renderEmbedCard, type EmbedFacts } from './embed-card.renderer.js';

export interface EmbedCardView {
  agent: Agent;
  facts: EmbedFacts;
  baseUrl: string;
}

/** /api/agents/{handle}/card: the HTML embed card, framed on other sites. */
export const agentEmbedCardDocument = defineDocument({
  id: 'AgentEmbedCard',
  path: '/api/agents/{handle}/card',
  contentType: HTML_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  // Framed on other sites: its policy travels with it wherever it is served from.
  headers: { 'Content-Security-Policy': EMBED_CARD_CSP, 'X-Content-Type-Options': 'nosniff' },
  examples: { valid: [], invalid: [] },
  render: (v: EmbedCardView) => renderEmbedCard(v.agent, v.facts, v.baseUrl),
});
