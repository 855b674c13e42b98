import { expect } from 'chai';
import { renderIdentity, type IdentityView } from '../../src/documents/agent/identity.document.js';
import { fileFindings, REGISTRATION_V1, resolutionFindings } from '../../src/documents/agent/registration-findings.js';
import { registrationProblems } from '../../src/domain/identity/erc8004.js';

const registry = '0x5FbDB2315678afecb367f091113dc7ad8CE0C0de';
const agentRegistry = `eip155:31337:${registry}`;
const file = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: REGISTRATION_V1,
  name: 'alice',
  description: 'Writes skills',
  services: [
    { name: 'A2A', endpoint: 'https://m.example/api/agents/alice/agent-card.json', version: '0.3.0' },
    { name: 'MCP', endpoint: 'https://m.example/mcp', version: '2025-11-25' },
  ],
  x402Support: true,
  active: true,
  registrations: [{ agentId: 7, agentRegistry }],
  ...overrides,
});
const codes = (f: Record<string, unknown>) => fileFindings(f, '7', agentRegistry).map((x) => [x.code, x.scanCode]);

describe('ERC-8004 registration findings, by our code and 8004scan', () => {
  it('a current registration file has no finding', () => {
    expect(codes(file())).to.deep.equal([]);
  });

  it('the older "endpoints" array is WA031, beside our endpoints_deprecated', () => {
    expect(codes(file({ services: undefined, endpoints: [] }))).to.deep.equal([['endpoints_deprecated', 'WA031']]);
  });

  it('a missing or wrong type, a missing name or description: WA001, WA002, WA003, WA004', () => {
    expect(codes(file({ type: undefined }))).to.deep.equal([['type_wrong', 'WA001']]);
    expect(codes(file({ type: 'Agent' }))).to.deep.equal([['type_wrong', 'WA002']]);
    expect(codes(file({ name: undefined, description: '' }))).to.deep.equal([
      ['name_missing', 'WA003'],
      ['description_missing', 'WA004'],
    ]);
  });

  it('an agentWallet in the file is WA083; a string active or x402Support, WA015 and WA016', () => {
    const withWallet = file({ services: [{ name: 'agentWallet', endpoint: `eip155:31337:${registry}` }] });
    expect(codes(withWallet)).to.deep.equal([['agent_wallet_off_chain', 'WA083']]);
    expect(codes(file({ active: 'true', x402Support: 'yes' }))).to.deep.equal([
      ['inactive', 'WA015'],
      ['x402_support_not_boolean', 'WA016'],
    ]);
  });

  it('registrations missing, empty or naming another token: IA004, IA005, WA080', () => {
    expect(codes(file({ registrations: undefined }))).to.deep.equal([['token_not_listed', 'IA004']]);
    expect(codes(file({ registrations: [] }))).to.deep.equal([['token_not_listed', 'IA005']]);
    expect(codes(file({ registrations: [{ agentId: 8, agentRegistry }] }))).to.deep.equal([
      ['token_not_listed', 'WA080'],
    ]);
  });

  it('advice (versions, wallet) does not make a file non-conformant; the conformance problems carry their scan code', () => {
    const advice = file({
      services: [
        { name: 'MCP', endpoint: 'https://m.example/mcp' },
        { name: 'agentWallet', endpoint: 'eip155:1:0x0' },
      ],
    });
    expect(codes(advice).map(([c]) => c)).to.deep.equal(['agent_wallet_off_chain', 'mcp_version_missing']);
    expect(registrationProblems(advice, registry, 31337, '7')).to.deep.equal([]);
    expect(registrationProblems(file({ services: undefined, endpoints: [] }), registry, 31337, '7')).to.deep.equal([
      'uses the deprecated "endpoints"; rename it to "services"',
    ]);
  });

  it('a token without a tokenURI is EA001; an unreadable file keeps its reason', () => {
    const base = { tokenId: '7', registry: agentRegistry, owner: '0x1', registration: null };
    expect(resolutionFindings({ ...base, tokenUri: null, registrationErrors: [] })[0]).to.include({
      code: 'token_uri_missing',
      scanCode: 'EA001',
    });
    const unreadable = resolutionFindings({
      ...base,
      tokenUri: 'https://x.example/a.json',
      registrationErrors: ['registration file unreadable: not JSON (not_json)'],
    });
    expect(unreadable).to.deep.equal([
      {
        code: 'file_unreadable',
        scanCode: null,
        severity: 'error',
        message: 'registration file unreadable: not JSON (not_json)',
      },
    ]);
  });

  it('the identity document suggests services[] without an agentWallet, and lists the findings of the linked file', () => {
    const view: IdentityView = {
      baseUrl: 'https://m.example',
      handle: 'alice',
      walletAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      chainId: 31337,
      identityRegistry: registry,
      erc8004: {
        resolution: {
          tokenId: '7',
          registry: agentRegistry,
          owner: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
          agentWallet: null,
          tokenUri: 'data:application/json,{}',
          registration: file({ services: undefined, endpoints: [] }),
          registrationErrors: ['uses the deprecated "endpoints"; rename it to "services"'],
          resolvedAt: '2026-11-28T00:00:00.000Z',
        },
        ownerMatches: true,
        payoutMatches: false,
      },
    };
    const doc = renderIdentity(view);
    expect(doc.registrationFile).to.include({ type: REGISTRATION_V1, x402Support: true, active: true });
    expect(doc.registrationFile.services.map((s) => s.name)).to.deep.equal(['web', 'A2A', 'MCP']);
    expect(doc.registrationFile.registrations).to.deep.equal([{ agentId: 7, agentRegistry }]);
    expect(fileFindings(doc.registrationFile, '7', agentRegistry), 'what we suggest is clean').to.deep.equal([]);
    expect(doc.erc8004?.registrationFindings).to.deep.equal([
      {
        code: 'endpoints_deprecated',
        scanCode: 'WA031',
        severity: 'warning',
        message: 'uses the deprecated "endpoints"; rename it to "services"',
      },
    ]);
  });
});
