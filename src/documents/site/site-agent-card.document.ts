import { A2A_AGENT_CARD_SCHEMA } from '../a2a-agent-card.schema.js';
import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_SITE } from '../examples.js';
import { renderSiteAgentCard, type SiteCardInput } from '../site-agent-card.renderer.js';

const valid = renderSiteAgentCard({
  ...EXAMPLE_SITE,
  receiptSigner: {
    address: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
    kid: 'did:pkh:eip155:1:0x90F79bf6EB2c4f870365E785982E1f101E93b906',
  },
});

/** /.well-known/agent-card.json: the site's signed A2A AgentCard (v1.0, with the v0.3 members), the crawl entry point. */
export const siteAgentCardDocument = defineDocument({
  id: 'SiteAgentCard',
  path: '/.well-known/agent-card.json',
  contentType: JSON_TYPE,
  cache: { maxAge: 300, staleWhileRevalidate: 86_400 },
  schema: A2A_AGENT_CARD_SCHEMA,
  examples: {
    valid: [valid],
    invalid: [
      { ...valid, name: undefined },
      { ...valid, capabilities: 'none' },
      { ...valid, securitySchemes: { x402: { type: 'http', scheme: 'x402' } } },
    ],
  },
  render: (site: SiteCardInput) => renderSiteAgentCard(site),
});
