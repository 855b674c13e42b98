import type { Agent } from '../../data/schema.js';
import { A2A_AGENT_CARD_SCHEMA } from '../a2a-agent-card.schema.js';
import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_AGENT, EXAMPLE_SITE } from '../examples.js';
import type { SiteInfo } from '../site-info.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';
import { renderAgentCard, type PublishedSkill } from './agent-card.renderer.js';

export interface AgentCardView {
  agent: Agent;
  skills: PublishedSkill[];
  site: SiteInfo;
}

const valid = renderAgentCard(
  EXAMPLE_AGENT,
  [
    {
      id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      title: 'PDF tables',
      preview: 'Extract every table of a PDF as CSV.',
      tags: ['pdf'],
      oasfSkills: [],
      priceAtomic: '1500000',
      installType: 'npm',
      integrity: { name: 'pdf-tables', version: 1, skillDigest: `sha256:${'b'.repeat(64)}`, signed: true },
    },
  ],
  EXAMPLE_SITE,
);

/** /api/agents/{handle}/agent-card.json: the agent's signed A2A AgentCard (v1.0, with the v0.3 members; docs/a2a.md). */
export const agentCardDocument = defineDocument({
  id: 'AgentCard',
  path: '/api/agents/{handle}/agent-card.json',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: A2A_AGENT_CARD_SCHEMA,
  examples: {
    valid: [valid, renderAgentCard({ ...EXAMPLE_AGENT, bio: null, docs_url: null }, [], EXAMPLE_SITE)],
    invalid: [
      { ...valid, protocolVersion: undefined },
      { ...valid, supportedInterfaces: undefined },
      { ...valid, supportedInterfaces: [{ url: 'https://market.example' }] },
      { ...valid, skills: [{ id: 'x' }] },
      { ...valid, 'x-unknown': true },
    ],
  },
  render: (v: AgentCardView) => renderAgentCard(v.agent, v.skills, v.site),
});
