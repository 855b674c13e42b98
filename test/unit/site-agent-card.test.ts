import { expect } from 'chai';
import { renderSiteAgentCard, formatUsdc } from '../../src/documents/site-agent-card.renderer.js';
import { schemaErrors, SCHEMAS } from '../../src/documents/validate.js';
import { jsonBytes } from '../../src/domain/publishing/publish-document.js';

const site = {
  baseUrl: 'https://market.example',
  apiVersion: '1.0.0',
  network: 'eip155:84532',
  usdcAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  registrationPriceAtomic: 1_000_000n,
};

describe('site AgentCard renderer', () => {
  it('renders a card that is valid against the A2A v0.3.0 AgentCard schema', () => {
    expect(schemaErrors(SCHEMAS.agentCard, renderSiteAgentCard(site))).to.deep.equal([]);
  });

  it('declares both security schemes and the HTTP+JSON transport at the base URL', () => {
    const card = renderSiteAgentCard(site);
    expect(card.url).to.equal('https://market.example');
    expect(card.preferredTransport).to.equal('HTTP+JSON');
    expect(card.securitySchemes.x402).to.include({ type: 'http', scheme: 'x402' });
    expect(card.securitySchemes.bearerJwt).to.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  });

  it('carries URL templates for crawling every per-agent document', () => {
    const ext = renderSiteAgentCard(site).capabilities.extensions[0]!;
    expect(ext.required).to.equal(false);
    const templates = ext.params.agentTemplates as Record<string, string>;
    expect(templates.agentCard).to.equal('https://market.example/api/agents/{handle}/agent-card.json');
    for (const [, url] of Object.entries(templates))
      expect(url).to.match(/^https:\/\/market\.example\/api\/agents\/\{handle\}\//);
    expect(Object.keys(templates)).to.include.members([
      'identity',
      'card',
      'badge',
      'health',
      'similar',
      'reputation',
      'score',
      'bestPractices',
    ]);
  });

  it('renders the same bytes for the same input, so an unchanged card is never re-published', () => {
    expect(jsonBytes(renderSiteAgentCard(site))).to.equal(jsonBytes(renderSiteAgentCard({ ...site })));
  });

  it('a card missing a required member fails validation with a readable error', () => {
    const { skills: _skills, ...broken } = renderSiteAgentCard(site);
    expect(schemaErrors(SCHEMAS.agentCard, broken).join()).to.contain("must have required property 'skills'");
  });

  it('formats atomic USDC exactly', () => {
    expect(formatUsdc(1_000_000n)).to.equal('1');
    expect(formatUsdc(1_500_000n)).to.equal('1.5');
    expect(formatUsdc(1n)).to.equal('0.000001');
    expect(formatUsdc(123_456_789_012_345_678n)).to.equal('123456789012.345678');
  });
});
