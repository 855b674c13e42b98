import { defineDocument, JSON_TYPE } from '../document.js';
import { anyObject, arrayOf, boolean, nullable, object, string } from '../schema-parts.js';
import { EXAMPLE_TIME } from '../examples.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';
import { agentLinks } from './agent-card.renderer.js';
import { A2A_VERSION, MCP_PATH, MCP_PROTOCOL_VERSION } from '../site-agent-card.renderer.js';
import { REGISTRATION_V1, resolutionFindings } from './registration-findings.js';

/** An ERC-8004 resolution of the agent's token, as the identity reader returns it. */
export interface IdentityResolution {
  tokenId: string;
  registry: string;
  owner: string | null;
  agentWallet: string | null;
  tokenUri: string | null;
  registration: Record<string, unknown> | null;
  registrationErrors: string[];
  resolvedAt: string;
}

export interface IdentityView {
  baseUrl: string;
  handle: string;
  walletAddress: string;
  /** The resolution and how it compares with the agent's wallet; null when no token is linked. */
  erc8004: { resolution: IdentityResolution; ownerMatches: boolean; payoutMatches: boolean } | null;
  chainId: number;
  identityRegistry: string;
}

/**
 * The ERC-8004 registration file this agent can serve at its token's URI: its services here (the
 * web page, its A2A AgentCard, the MCP server that sells its skills), x402 support, and its token
 * once linked. No `agentWallet` service: the current ERC-8004 keeps the payout wallet on chain
 * (`setAgentWallet`), and explorers flag one in the file (8004scan WA083). The file is the agent's
 * to publish; this is what it would say.
 */
function registrationFileFor(v: IdentityView) {
  const base = v.baseUrl;
  const agent = `${base}/api/agents/${v.handle}`;
  const tokenId = v.erc8004?.resolution.tokenId;
  const agentId = tokenId && /^[0-9]{1,15}$/.test(tokenId) ? Number(tokenId) : tokenId;
  return {
    type: REGISTRATION_V1,
    name: v.handle,
    description: `@${v.handle} on Skill Market: Agent Skills sold for USDC over x402, over HTTP and MCP.`,
    services: [
      { name: 'web', endpoint: `${base}/agents/${v.handle}` },
      { name: 'A2A', endpoint: `${agent}/agent-card.json`, version: A2A_VERSION },
      { name: 'MCP', endpoint: `${base}${MCP_PATH}`, version: MCP_PROTOCOL_VERSION },
    ],
    x402Support: true,
    active: true,
    registrations:
      agentId === undefined ? [] : [{ agentId, agentRegistry: `eip155:${v.chainId}:${v.identityRegistry}` }],
    supportedTrust: ['reputation'],
  };
}

/** The agent's ERC-8004 identity as resolved, or how to register one. */
export function renderIdentity(v: IdentityView) {
  return {
    agent: { handle: v.handle, walletAddress: v.walletAddress },
    erc8004: v.erc8004
      ? {
          ...v.erc8004.resolution,
          // What an explorer says of the file, under our code and 8004scan's (registration-findings.ts).
          registrationFindings: resolutionFindings(v.erc8004.resolution),
          ownerMatchesWallet: v.erc8004.ownerMatches,
          payoutMatchesAgentWallet: v.erc8004.payoutMatches,
        }
      : null,
    howToRegister: v.erc8004
      ? null
      : `Serve registrationFile at a URL (or as a data: URI), call register(tokenURI) on the IdentityRegistry ${v.identityRegistry} (eip155:${v.chainId}) from ${v.walletAddress}, then PATCH /api/agents/me with erc8004AgentId.`,
    registrationFile: registrationFileFor(v),
    links: agentLinks(v.baseUrl, v.handle),
  };
}

const view: IdentityView = {
  baseUrl: 'https://market.example',
  handle: 'acme-extractor',
  walletAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  erc8004: {
    resolution: {
      tokenId: '7',
      registry: 'eip155:84532:0x8004A169FB4a3325136EB29fA0ceB6D2e539a432',
      owner: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      agentWallet: null,
      tokenUri: 'https://acme.example/agent.json',
      registration: null,
      registrationErrors: ['registration file unreadable'],
      resolvedAt: EXAMPLE_TIME,
    },
    ownerMatches: true,
    payoutMatches: false,
  },
  chainId: 84532,
  identityRegistry: '0x8004A169FB4a3325136EB29fA0ceB6D2e539a432',
};
const linked = renderIdentity(view);
const unlinked = renderIdentity({ ...view, erc8004: null });

/** /api/agents/{handle}/identity */
export const agentIdentityDocument = defineDocument({
  id: 'AgentIdentity',
  path: '/api/agents/{handle}/identity',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: object({
    agent: object({ handle: string, walletAddress: string }),
    erc8004: nullable(
      object({
        tokenId: string,
        registry: string,
        owner: nullable(string),
        agentWallet: nullable(string),
        tokenUri: nullable(string),
        registration: nullable(anyObject),
        registrationErrors: arrayOf(string),
        registrationFindings: arrayOf(
          object({ code: string, scanCode: nullable(string), severity: string, message: string }),
        ),
        resolvedAt: string,
        ownerMatchesWallet: boolean,
        payoutMatchesAgentWallet: boolean,
      }),
    ),
    howToRegister: nullable(string),
    registrationFile: object({
      type: string,
      name: string,
      description: string,
      services: arrayOf(anyObject),
      x402Support: boolean,
      active: boolean,
      registrations: arrayOf(anyObject),
      supportedTrust: arrayOf(string),
    }),
    links: anyObject,
  }),
  examples: {
    valid: [linked, unlinked],
    invalid: [
      { ...linked, erc8004: { tokenId: 7 } },
      { ...unlinked, links: undefined },
      { ...linked, registrationFile: { ...linked.registrationFile, services: 'MCP' } },
    ],
  },
  render: renderIdentity,
});
