import type { Agent } from '../../data/schema.js';
import { signCard, withoutEmptyValues } from '../card-signature.js';
import type { SiteInfo } from '../site-info.js';
import { A2A_PROTOCOL_VERSION, A2A_VERSION } from '../site-agent-card.renderer.js';

/**
 * The A2A version stated for an endpoint an agent declares itself (`capabilities.a2a`). The
 * profile declares only its URL; the marketplace does not speak to it, and an agent that declares
 * one today most likely serves A2A 0.3 over JSON-RPC, so its interface says 0.3: a 1.0 client then
 * speaks 0.3 to it rather than sending 1.0 methods to a 0.3 server.
 */
export const DECLARED_A2A_ENDPOINT_VERSION = '0.3';

export interface PublishedSkill {
  id: string;
  title: string;
  preview: string;
  tags: string[];
  oasfSkills: string[];
  priceAtomic: string;
  installType: string | null;
  /** The current version: its Agent Skill name, number, skill digest and whether the seller signed it. */
  integrity: { name: string; version: number; skillDigest: string; signed: boolean };
}

export const INSTALL_EXTENSION_PATH = '/spec/x-market-install-v1.json';

/** Links of an agent's documents, as every per-agent document names them. */
export function agentLinks(baseUrl: string, handle: string) {
  const a = `${baseUrl}/api/agents/${handle}`;
  return {
    agentCard: `${a}/agent-card.json`,
    score: `${a}/score.json`,
    bestPractices: `${a}/best-practices.json`,
    health: `${a}/health.json`,
    identity: `${a}/identity`,
    badge: `${a}/badge.svg`,
    card: `${a}/card`,
    similar: `${a}/similar.json`,
    reputation: `${a}/reputation.json`,
  };
}

/**
 * The per-agent A2A AgentCard, signed: a v1.0 card (its interface in `supportedInterfaces`) that
 * also carries the members a v0.3 client needs (`protocolVersion`, `url`, `preferredTransport`).
 * The agent's skills are its published posts; it links its score, best-practices, badge and
 * identity documents, and carries the `x-market-install` extension (how to install and buy its
 * skills, with each skill's integrity) as a declared capability extension.
 *
 * Throws CardUnsignedError when `site` has no card signer: no card is published unsigned.
 */
export function renderAgentCard(agent: Agent, skills: PublishedSkill[], site: SiteInfo) {
  return signCard(agentCardContent(agent, skills, site), site.cardSigner);
}

/** The card of `renderAgentCard` before it is signed: every member but `signatures`. */
export function agentCardContent(agent: Agent, skills: PublishedSkill[], site: SiteInfo) {
  const base = site.baseUrl;
  const links = agentLinks(base, agent.handle);
  const install = {
    marketplace: base,
    agent: agent.handle,
    payment: {
      protocol: 'x402',
      versions: [1, 2],
      network: site.network,
      asset: site.usdcAddress,
      payTo: agent.wallet_address,
    },
    agentInstall: agent.install_manifest ?? null,
    skills: skills.map((s) => ({
      id: s.id,
      manifest: `${base}/api/posts/${s.id}/manifest.json`,
      full: `${base}/api/posts/${s.id}?view=full`,
      priceAtomic: s.priceAtomic,
      installType: s.installType,
      // What a buyer checks the files it gets against (the full view states each file's digest and the signature).
      name: s.integrity.name,
      version: s.integrity.version,
      skillDigest: s.integrity.skillDigest,
      signed: s.integrity.signed,
    })),
  };
  const declared = agent.capabilities.a2a;
  // The agent's own endpoint, in the version it is assumed to speak; else this card's URL, which we serve (1.0 and 0.3).
  const url = declared ?? links.agentCard;
  const binding = declared ? 'JSONRPC' : 'HTTP+JSON';
  const interfaceVersion = declared ? DECLARED_A2A_ENDPOINT_VERSION : A2A_VERSION;
  return {
    name: agent.display_name ?? agent.handle,
    description: agent.bio ?? `@${agent.handle} on Skill Market`,
    supportedInterfaces: [{ url, protocolBinding: binding, protocolVersion: interfaceVersion }],
    version: '1.0.0',
    ...(agent.avatar_url ? { iconUrl: agent.avatar_url } : {}),
    ...(agent.docs_url ? { documentationUrl: agent.docs_url } : {}),
    provider: {
      organization: agent.display_name ?? agent.handle,
      url: agent.website_url ?? `${base}/api/agents/${agent.handle}/card`,
    },
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [
        {
          uri: `${base}${INSTALL_EXTENSION_PATH}`,
          description:
            "x-market-install: how to buy (x402, USDC) and install this agent's skills on Skill Market, with each skill's digest.",
          params: withoutEmptyValues(install),
        },
        {
          uri: `${base}/spec/market-score-v1.json`,
          description: 'Marketplace documents of this agent: score, best practices, health, identity, badge.',
          params: links,
        },
      ],
    },
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: skills.map((s) => ({
      id: s.id,
      name: s.title,
      description: s.preview || s.title,
      tags: [...new Set([...s.tags, ...s.oasfSkills.map((x) => x.split('/').pop() ?? x)])],
      examples: [`GET ${base}/api/posts/${s.id}?view=full`],
      inputModes: ['application/json'],
      outputModes: ['application/json'],
    })),
    // A2A v0.3 reads these three; v1.0 reads supportedInterfaces (docs/a2a.md).
    protocolVersion: A2A_PROTOCOL_VERSION,
    url,
    preferredTransport: binding,
  };
}
