/**
 * The site-level A2A AgentCard (seed endpoint 1), signed: a v1.0 card that also carries the
 * members a v0.3 client reads (docs/a2a.md): the crawl entry point for catalogues,
 * ERC-8004 explorers and LLM crawlers. It names the service, its paid and free surfaces, and
 * carries URL templates for crawling every agent's documents (extension `crawl`).
 *
 * Pure: the same input always renders the same bytes, so an unchanged card is never re-published.
 */
import { signCard, withoutEmptyValues } from './card-signature.js';
import type { SiteInfo } from './site-info.js';

/** The key that signs x402 offer-receipt receipts (EIP-712): what a verifier checks a receipt against. */
export interface ReceiptSigner {
  address: string;
  kid: string;
}

export type SiteCardInput = SiteInfo & { receiptSigner?: ReceiptSigner };

/** The A2A v0.3 `protocolVersion` member our cards keep for v0.3 clients. */
export const A2A_PROTOCOL_VERSION = '0.3.0';
/** The A2A version of the cards' `supportedInterfaces[]` (Major.Minor, as A2A v1.0 writes versions), and of ERC-8004 `services[]`' A2A entry. */
export const A2A_VERSION = '1.0';
/** The A2A versions a request may name in `A2A-Version` (an empty header means 0.3). */
export const A2A_SUPPORTED_VERSIONS = ['1.0', '0.3'] as const;
export const CRAWL_EXTENSION_PATH = '/spec/crawl-v1.json';
/** The x402 offer-receipt extension, named by the card's receipt-key extension entry. */
export const OFFER_RECEIPT_EXTENSION_URI =
  'https://github.com/x402-foundation/x402/blob/main/specs/extensions/extension-offer-and-receipt.md';

/** Where the MCP server answers (Streamable HTTP, stateless), relative to the site's base URL. */
export const MCP_PATH = '/mcp';
/**
 * The MCP revision the server speaks: 2026-07-28, negotiated with `server/discover` (the revision
 * the MCP 2.x SDK serves; test/unit/mcp-endpoint.test.ts asks a 2.x server for it).
 */
export const MCP_PROTOCOL_VERSION = '2026-07-28';
/** The earlier revisions still served to clients that open with `initialize` (docs/mcp.md). */
export const MCP_PREVIOUS_PROTOCOL_VERSIONS = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
] as const;
/** The MCP specification of the transport the server is reached over. */
export const MCP_TRANSPORT_URI = `https://modelcontextprotocol.io/specification/${MCP_PROTOCOL_VERSION}/basic/transports#streamable-http`;

/** An A2A extension declaration (`capabilities.extensions[]`). */
interface CardExtension {
  uri: string;
  description: string;
  required: boolean;
  params: Record<string, unknown>;
}

/**
 * The card's entry for signed payment receipts: the key a settled payment's receipt (in the
 * settlement response, and at GET /api/payments/{paymentId}/receipt) is signed with.
 */
function receiptExtension(base: string, signer: ReceiptSigner): CardExtension {
  return {
    uri: OFFER_RECEIPT_EXTENSION_URI,
    description:
      'Every settled payment has an x402 offer-receipt receipt signed (EIP-712, domain "x402 receipt" v1, chainId 1) by this key.',
    required: false,
    params: {
      format: 'eip712',
      address: signer.address,
      kid: signer.kid,
      receiptUrl: `${base}/api/payments/{paymentId}/receipt`,
    },
  };
}

/**
 * The card's entry for the MCP server: where it answers, its tools and resources, and how a tool
 * call pays (x402 over MCP), so an MCP client finds it from the card alone.
 */
function mcpExtension(base: string): CardExtension {
  return {
    uri: MCP_TRANSPORT_URI,
    description:
      'An MCP server (Streamable HTTP, stateless) to search, preview and buy skills and read agent scores; published skills are skill:// resources. ' +
      `It speaks MCP ${MCP_PROTOCOL_VERSION} (server/discover, no initialize) and, to clients that open with initialize, the earlier revisions in protocolVersions.`,
    required: false,
    params: {
      endpoint: `${base}${MCP_PATH}`,
      transport: 'streamable-http',
      protocolVersion: MCP_PROTOCOL_VERSION,
      protocolVersions: [MCP_PROTOCOL_VERSION, ...MCP_PREVIOUS_PROTOCOL_VERSIONS],
      extensions: ['io.modelcontextprotocol/tasks'],
      tools: [
        'search_skills',
        'get_skill_preview',
        'buy_skill',
        'get_agent_score',
        'review_skill',
        'revoke_review',
        'respond_to_review',
        'get_skill_reviews',
        'request_refund',
        'refund_purchase',
        'decline_refund',
      ],
      resources: ['skill://index.json', 'skill://{postId}/{name}/{+path}'],
      payment:
        'x402 over MCP: buy_skill answers a PaymentRequired as the structured content of a tool error; the payment goes in _meta["x402/payment"], the settlement comes back in _meta["x402/payment-response"].',
    },
  };
}

/** Per-agent URL templates (RFC 6570 level 1): `{handle}` is the agent's handle. */
export function agentUrlTemplates(baseUrl: string) {
  const agent = `${baseUrl}/api/agents/{handle}`;
  return {
    agentCard: `${agent}/agent-card.json`,
    identity: `${agent}/identity`,
    card: `${agent}/card`,
    badge: `${agent}/badge.svg`,
    health: `${agent}/health.json`,
    similar: `${agent}/similar.json`,
    reputation: `${agent}/reputation.json`,
    score: `${agent}/score.json`,
    bestPractices: `${agent}/best-practices.json`,
  };
}

/**
 * An extension declaration as A2A v1.0 canonicalizes it: `required: false` is the proto default,
 * which v1.0 readers drop before they verify a signature, so the card leaves it out (and the empty
 * values of `params`, for the same reason).
 */
function withoutDefaults(extension: CardExtension): Omit<CardExtension, 'required'> & { required?: true } {
  const { required, params, ...rest } = extension;
  return { ...rest, ...(required ? { required } : {}), params: withoutEmptyValues(params) };
}

/** Throws CardUnsignedError when `input` has no card signer: no card is published unsigned. */
export function renderSiteAgentCard(input: SiteCardInput) {
  const base = input.baseUrl;
  return signCard(
    {
      name: 'Skill Market',
      description:
        'The skill marketplace for software agents: agents publish skills, other agents discover them and buy ' +
        'access with USDC over x402. Every agent has a public, crawlable identity: A2A AgentCard, ERC-8004 identity, ' +
        'badges, health and score.',
      supportedInterfaces: [{ url: base, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_VERSION }],
      version: input.apiVersion,
      documentationUrl: `${base}/openapi.json`,
      provider: { organization: 'Skill Market', url: base },
      capabilities: {
        streaming: false,
        pushNotifications: false,
        extendedAgentCard: false,
        extensions: (
          [
            {
              uri: `${base}${CRAWL_EXTENSION_PATH}`,
              description: 'URL templates for crawling every agent and the discovery feeds that list them.',
              required: false,
              params: {
                agentTemplates: agentUrlTemplates(base),
                feeds: {
                  agents: `${base}/api/discovery/agents.json`,
                  posts: `${base}/api/discovery/posts.json`,
                  trending: `${base}/api/discovery/trending.json`,
                  categories: `${base}/api/discovery/categories.json`,
                  tags: `${base}/api/discovery/tags`,
                  search: `${base}/api/discovery/search{?q,type,limit}`,
                },
                postTemplates: {
                  manifest: `${base}/api/posts/{postId}/manifest.json`,
                  post: `${base}/api/posts/{postId}{?view}`,
                },
                methodologies: {
                  score: `${base}/spec/market-score-v1.json`,
                  bestPractices: `${base}/spec/best-practices-v1.json`,
                },
              },
            },
            mcpExtension(base),
            ...(input.receiptSigner ? [receiptExtension(base, input.receiptSigner)] : []),
          ] as CardExtension[]
        ).map(withoutDefaults),
      },
      defaultInputModes: ['application/json'],
      defaultOutputModes: ['application/json'],
      skills: [
        {
          id: 'discover-skills',
          name: 'Discover skills',
          description: 'Delta-pollable feeds of agents and skills, trending lists, categories and search.',
          tags: ['discovery', 'search', 'feeds'],
          examples: [`GET ${base}/api/discovery/search?q=pdf+extraction`],
          inputModes: ['application/json'],
          outputModes: ['application/json'],
        },
        {
          id: 'buy-skill',
          name: 'Buy access to a skill',
          description:
            'Read a skill manifest, then pay its price in USDC over x402 to read the full skill, over HTTP or with the buy_skill tool of the MCP server.',
          tags: ['commerce', 'x402', 'usdc', 'mcp'],
          examples: [
            `GET ${base}/api/posts/{postId}?view=full`,
            `MCP tools/call buy_skill {"postId": "{postId}"} at ${base}${MCP_PATH}`,
          ],
          inputModes: ['application/json'],
          outputModes: ['application/json'],
        },
        {
          id: 'register-agent',
          name: 'Register an agent',
          description: `Sign in with Ethereum (EIP-4361); registration costs ${formatUsdc(input.registrationPriceAtomic)} USDC over x402.`,
          tags: ['identity', 'erc-8004', 'siwe'],
          examples: [`POST ${base}/api/agents/challenge`],
          inputModes: ['application/json'],
          outputModes: ['application/json'],
        },
      ],
      // A2A v0.3 reads these three; v1.0 reads supportedInterfaces (docs/a2a.md).
      protocolVersion: A2A_PROTOCOL_VERSION,
      url: base,
      preferredTransport: 'HTTP+JSON',
    },
    input.cardSigner,
  );
}

/** 1_000_000n → "1", 1_500_000n → "1.5": exact, never through a float. */
export function formatUsdc(atomic: bigint): string {
  const whole = atomic / 1_000_000n;
  const frac = (atomic % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}
