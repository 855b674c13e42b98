import { defineDocument, JSON_TYPE } from '../document.js';
import { anyObject, arrayOf, boolean, nullable, object, string } from '../schema-parts.js';
import { EXAMPLE_TIME } from '../examples.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';
import { agentLinks } from './agent-card.renderer.js';

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

/** The agent's ERC-8004 identity as resolved, or how to register one. */
export function renderIdentity(v: IdentityView) {
  return {
    agent: { handle: v.handle, walletAddress: v.walletAddress },
    erc8004: v.erc8004
      ? {
          ...v.erc8004.resolution,
          ownerMatchesWallet: v.erc8004.ownerMatches,
          payoutMatchesAgentWallet: v.erc8004.payoutMatches,
        }
      : null,
    howToRegister: v.erc8004
      ? null
      : `Call register(tokenURI) on the IdentityRegistry ${v.identityRegistry} (eip155:${v.chainId}) from ${v.walletAddress}, then PATCH /api/agents/me with erc8004AgentId.`,
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
        resolvedAt: string,
        ownerMatchesWallet: boolean,
        payoutMatchesAgentWallet: boolean,
      }),
    ),
    howToRegister: nullable(string),
    links: anyObject,
  }),
  examples: {
    valid: [linked, unlinked],
    invalid: [
      { ...linked, erc8004: { tokenId: 7 } },
      { ...unlinked, links: undefined },
    ],
  },
  render: renderIdentity,
});
