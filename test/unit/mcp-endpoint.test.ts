import { expect } from 'chai';
import { createMcpHandler, McpServer, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import {
  MCP_PREVIOUS_PROTOCOL_VERSIONS,
  MCP_PROTOCOL_VERSION,
  MCP_TRANSPORT_URI,
  renderSiteAgentCard,
} from '../../src/documents/site-agent-card.renderer.js';
import { renderIdentity } from '../../src/documents/agent/identity.document.js';
import { schemaErrors, SCHEMAS } from '../../src/documents/validate.js';
import { EXAMPLE_SITE } from '../../src/documents/examples.js';
import { frontmatterOf, integrityOf, skillNameOf } from '../../src/api/mcp/skill-integrity.js';
import { fileDigest, skillDigest } from '@skill-market/skill-protocol/skill-digest';

const site = {
  baseUrl: 'https://market.example',
  apiVersion: '1.0.0',
  network: 'eip155:84532',
  usdcAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  registrationPriceAtomic: 1_000_000n,
  cardSigner: EXAMPLE_SITE.cardSigner,
};

describe('the MCP endpoint as the site AgentCard and ERC-8004 registration files state it', () => {
  it('the stated MCP revisions are the ones the 2.x SDK serves: the current one by server/discover, the earlier ones by initialize', async () => {
    const handler = createMcpHandler(() => new McpServer({ name: 'probe', version: '1.0.0' }), { legacy: 'reject' });
    const answer = await handler.fetch(
      new Request('http://probe.invalid/mcp', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MCP_PROTOCOL_VERSION,
          'mcp-method': 'server/discover',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'server/discover',
          params: {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': MCP_PROTOCOL_VERSION,
              'io.modelcontextprotocol/clientInfo': { name: 'unit', version: '1.0.0' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      }),
    );
    const discovered = (await answer.json()) as { result: { supportedVersions: string[] } };
    expect(discovered.result.supportedVersions).to.deep.equal([MCP_PROTOCOL_VERSION]);
    expect(MCP_PREVIOUS_PROTOCOL_VERSIONS).to.deep.equal(SUPPORTED_PROTOCOL_VERSIONS);
    await handler.close();
  });

  it('the site AgentCard names the MCP endpoint, its tools and how a tool call pays, and stays a valid A2A card', () => {
    const card = renderSiteAgentCard(site);
    expect(schemaErrors(SCHEMAS.agentCard, card)).to.deep.equal([]);
    const mcp = card.capabilities.extensions.find((e) => e.uri === MCP_TRANSPORT_URI)!;
    expect(mcp.params).to.deep.include({
      endpoint: 'https://market.example/mcp',
      transport: 'streamable-http',
      protocolVersion: MCP_PROTOCOL_VERSION,
    });
    expect(mcp.params.tools).to.include('buy_skill');
    expect(String(mcp.params.payment)).to.include('_meta["x402/payment"]');
  });

  it("an agent's registration file lists the MCP service, with its token once linked", () => {
    const view = {
      baseUrl: 'https://market.example',
      handle: 'acme-extractor',
      walletAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      erc8004: null,
      chainId: 84532,
      identityRegistry: '0x8004A818BFB912233c491871b3d84c89A494BD9e',
    };
    const unlinked = renderIdentity(view).registrationFile;
    expect(unlinked.type).to.equal('https://eips.ethereum.org/EIPS/eip-8004#registration-v1');
    expect(unlinked.services).to.deep.include({
      name: 'MCP',
      endpoint: 'https://market.example/mcp',
      version: MCP_PROTOCOL_VERSION,
    });
    expect(unlinked.services.map((s) => s.name)).to.deep.equal(['web', 'A2A', 'MCP']);
    expect(unlinked.registrations).to.deep.equal([]);
    const linked = renderIdentity({
      ...view,
      erc8004: {
        resolution: {
          tokenId: '7',
          registry: `eip155:84532:${view.identityRegistry}`,
          owner: view.walletAddress,
          agentWallet: null,
          tokenUri: null,
          registration: null,
          registrationErrors: [],
          resolvedAt: '2026-01-01T00:00:00.000Z',
        },
        ownerMatches: true,
        payoutMatches: false,
      },
    }).registrationFile;
    expect(linked.registrations).to.deep.equal([
      { agentId: 7, agentRegistry: `eip155:84532:${view.identityRegistry}` },
    ]);
  });
});

describe('the integrity of a skill delivered over MCP', () => {
  const files = [
    { path: 'scripts/run.sh', content: 'echo hi\n' },
    { path: 'SKILL.md', content: '---\nname: pdf-tables\ndescription: Extracts tables.\n---\n# PDF tables\n' },
  ];

  it('names the skill by its frontmatter and digests every file and the whole skill', () => {
    const integrity = integrityOf({ id: 'p', title: 'PDF tables!', version: 3, versionLabel: '1.2.0', files });
    expect(integrity).to.deep.include({ name: 'pdf-tables', version: 3, versionLabel: '1.2.0', signature: null });
    expect(integrity.skillDigest).to.equal(skillDigest(files));
    expect(integrity.files).to.deep.equal([
      { path: 'SKILL.md', digest: fileDigest(files[1]!.content) },
      { path: 'scripts/run.sh', digest: fileDigest('echo hi\n') },
    ]);
  });

  it("carries the seller's signature the full view states", () => {
    const signature = { signer: '0xabc', value: '0x01', scheme: 'eip712' as const, typedData: {} };
    expect(integrityOf({ id: 'p', title: 't', version: 1, files, integrity: { signature } }).signature).to.equal(
      signature,
    );
  });

  it('falls back to a name made from the title when SKILL.md has no valid name', () => {
    expect(skillNameOf('# no frontmatter', 'Weather -- Report!')).to.equal('weather-report');
    expect(skillNameOf('---\nname: Bad_Name\n---\n', 'Good one')).to.equal('good-one');
    expect(skillNameOf(undefined, '???')).to.equal('skill');
    expect(frontmatterOf('---\n: [unclosed\n---\n')).to.equal(undefined);
  });
});
