import { defineDocument, JSON_TYPE } from '../document.js';
import { arrayOf, number, object, string } from '../schema-parts.js';
import { EXAMPLE_TIME } from '../examples.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';
import { agentLinks } from './agent-card.renderer.js';

export interface SimilarView {
  baseUrl: string;
  handle: string;
  similar: ReadonlyArray<{ handle: string; similarity: number; shared: string[]; method: string }>;
  computedAt: string;
}

export const SIMILARITY_METHODOLOGY =
  'IDF-weighted Jaccard over OASF skills and domains and skill tags (idf = ln(1 + N/df)); buyer-wallet Jaccard when the agent has no features';

/** The agent's most similar agents, best first, with the features they share. */
export function renderSimilar(v: SimilarView) {
  return {
    agent: { handle: v.handle },
    method: v.similar[0]?.method ?? 'idf-jaccard',
    similar: v.similar.map((s) => ({
      handle: s.handle,
      similarity: s.similarity,
      shared: s.shared,
      agentCard: agentLinks(v.baseUrl, s.handle).agentCard,
    })),
    methodology: SIMILARITY_METHODOLOGY,
    computedAt: v.computedAt,
  };
}

const valid = renderSimilar({
  baseUrl: 'https://market.example',
  handle: 'acme-extractor',
  similar: [{ handle: 'pdf-wizard', similarity: 0.42, shared: ['tag:pdf'], method: 'idf-jaccard' }],
  computedAt: EXAMPLE_TIME,
});

/** /api/agents/{handle}/similar.json */
export const agentSimilarDocument = defineDocument({
  id: 'AgentSimilar',
  path: '/api/agents/{handle}/similar.json',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: object({
    agent: object({ handle: string }),
    method: { enum: ['idf-jaccard', 'buyer-overlap'] },
    similar: arrayOf(object({ handle: string, similarity: number, shared: arrayOf(string), agentCard: string })),
    methodology: string,
    computedAt: string,
  }),
  examples: {
    valid: [
      valid,
      renderSimilar({ baseUrl: 'https://market.example', handle: 'a-b-c', similar: [], computedAt: EXAMPLE_TIME }),
    ],
    invalid: [
      { ...valid, method: 'cosine' },
      { ...valid, similar: [{ handle: 'pdf-wizard', similarity: '0.42', shared: [], agentCard: 'x' }] },
    ],
  },
  render: renderSimilar,
});
