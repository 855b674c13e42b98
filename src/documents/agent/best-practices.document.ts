import { defineDocument, JSON_TYPE } from '../document.js';
import { arrayOf, integer, nullable, number, object, string } from '../schema-parts.js';
import { EXAMPLE_TIME } from '../examples.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';

/** The checklist as the scorer evaluates it, and whose it is. */
export interface BestPracticesView {
  baseUrl: string;
  source: string;
  handle: string;
  /** The checklist members of the score document (items, counts, completionPct, methodology). */
  checklist: Record<string, unknown>;
  computedAt: string;
}

/** The standalone checklist: the score document's `bestPractices`, with its methodology and subject. */
export function renderBestPractices(v: BestPracticesView) {
  return {
    $schema: `${v.baseUrl}/spec/best-practices-v1.json`,
    source: v.source,
    agent: { handle: v.handle },
    ...v.checklist,
    computedAt: v.computedAt,
  };
}

const item = object({
  id: string,
  label: string,
  status: { enum: ['passed', 'partial', 'missing'] },
  howToFix: nullable(string),
  ref: string,
});

const valid = renderBestPractices({
  baseUrl: 'https://market.example',
  source: 'skill-market',
  handle: 'acme-extractor',
  checklist: {
    items: [
      {
        id: 'profile-complete',
        label: 'Profile complete',
        status: 'passed',
        howToFix: null,
        ref: '/spec/best-practices-v1.json#profile-complete',
      },
    ],
    passed: 1,
    partial: 0,
    completionPct: 10,
    methodology: 'https://market.example/spec/best-practices-v1.json',
  },
  computedAt: EXAMPLE_TIME,
});

/** /api/agents/{handle}/best-practices.json: the ten-item checklist. */
export const agentBestPracticesDocument = defineDocument({
  id: 'AgentBestPractices',
  path: '/api/agents/{handle}/best-practices.json',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: object({
    $schema: string,
    source: string,
    agent: object({ handle: string }),
    items: arrayOf(item),
    passed: integer,
    partial: integer,
    completionPct: number,
    computedAt: string,
  }),
  examples: {
    valid: [valid],
    invalid: [
      { ...valid, items: [{ id: 'x', label: 'x', status: 'done', howToFix: null, ref: '#x' }] },
      { ...valid, agent: undefined },
    ],
  },
  render: renderBestPractices,
});
