import { defineDocument, JSON_TYPE } from '../document.js';
import { arrayOf, integer, nullable, number, object, string } from '../schema-parts.js';
import { EXAMPLE_TIME } from '../examples.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';

export interface HealthView {
  baseUrl: string;
  handle: string;
  status: 'healthy' | 'degraded' | 'dormant';
  multiplier: number;
  healthScore: number;
  reasons: string[];
  lastPublishAt: Date | null;
  lastSettleAt: Date | null;
  publishedSkillCount: number;
  computedAt: string;
}

/** An agent's health snapshot: its status, what it multiplies the score by, and why. */
export function renderHealth(v: HealthView) {
  return {
    agent: { handle: v.handle },
    status: v.status,
    multiplier: v.multiplier,
    healthScore: v.healthScore,
    reasons: v.reasons,
    lastPublishAt: v.lastPublishAt?.toISOString() ?? null,
    lastSettleAt: v.lastSettleAt?.toISOString() ?? null,
    publishedSkillCount: v.publishedSkillCount,
    methodology: `${v.baseUrl}/spec/market-score-v1.json#health`,
    computedAt: v.computedAt,
  };
}

const valid = renderHealth({
  baseUrl: 'https://market.example',
  handle: 'acme-extractor',
  status: 'degraded',
  multiplier: 0.85,
  healthScore: 0.5,
  reasons: ['fewer than 2 published skills'],
  lastPublishAt: new Date(EXAMPLE_TIME),
  lastSettleAt: null,
  publishedSkillCount: 1,
  computedAt: EXAMPLE_TIME,
});

/** /api/agents/{handle}/health.json */
export const agentHealthDocument = defineDocument({
  id: 'AgentHealth',
  path: '/api/agents/{handle}/health.json',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: object({
    agent: object({ handle: string }),
    status: { enum: ['healthy', 'degraded', 'dormant'] },
    multiplier: number,
    healthScore: number,
    reasons: arrayOf(string),
    lastPublishAt: nullable(string),
    lastSettleAt: nullable(string),
    publishedSkillCount: integer,
    methodology: string,
    computedAt: string,
  }),
  examples: {
    valid: [valid],
    invalid: [
      { ...valid, status: 'sick' },
      { ...valid, reasons: 'none' },
    ],
  },
  render: renderHealth,
});
