import { defineDocument, JSON_TYPE } from '../document.js';
import { anyObject, arrayOf, integer, nullable, number, object, string } from '../schema-parts.js';
import { EXAMPLE_TIME } from '../examples.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';

/** The score document as the scorer computes it (src/domain/scoring/score.ts, pure over the agent's facts). */
export type ScoreDocumentView = { score: { score: number } } & Record<string, unknown>;

const valid = {
  $schema: 'https://market.example/spec/market-score-v1.json',
  source: 'skill-market',
  subject: { handle: 'acme-extractor', walletAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', tokenId: '7' },
  score: {
    score: 61.2,
    rawScore: 61.2,
    dimensions: { transparency: 0.9 },
    contributions: { transparency: 22.5 },
    components: { transparency: { profileComplete: 1 } },
    health: { status: 'healthy', multiplier: 1 },
    weights: { transparency: 0.25 },
    methodology: 'https://market.example/spec/market-score-v1.json',
    version: 'v1',
    computedAt: EXAMPLE_TIME,
  },
  bestPractices: { items: [], passed: 0, partial: 0 },
  inputs: { daysSinceLastSettle: null },
  methodology: 'https://market.example/spec/market-score-v1.json',
  computedAt: EXAMPLE_TIME,
};

/** /api/agents/{handle}/score.json: the agent's score, its dimensions and components, and the checklist. */
export const agentScoreDocument = defineDocument({
  id: 'AgentScore',
  path: '/api/agents/{handle}/score.json',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: object({
    $schema: string,
    source: string,
    subject: object({ handle: string, walletAddress: string, tokenId: nullable(string) }),
    score: object({
      score: number,
      rawScore: number,
      dimensions: anyObject,
      contributions: anyObject,
      components: anyObject,
      health: object({ status: { enum: ['healthy', 'degraded', 'dormant'] }, multiplier: number }),
      methodology: string,
      computedAt: string,
    }),
    bestPractices: object({ items: arrayOf(anyObject), passed: integer, partial: integer }),
    inputs: anyObject,
    methodology: string,
    computedAt: string,
  }),
  examples: {
    valid: [valid],
    invalid: [
      { ...valid, score: { ...valid.score, score: '61.2' } },
      { ...valid, subject: { handle: 'acme-extractor' } },
    ],
  },
  // The scorer builds the whole document from the facts; publishing adds nothing to it.
  render: (doc: ScoreDocumentView) => doc,
});
