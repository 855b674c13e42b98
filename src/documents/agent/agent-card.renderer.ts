import type { Agent } from '../../data/schema.js';
import type { SiteInfo } from '../site-info.js';
import { A2A_PROTOCOL_VERSION } from '../site-agent-card.renderer.js';

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
 * The per-agent A2A v0.3 AgentCard: the agent's skills are its published posts, it declares the
 * x402 and bearer-JWT security schemes, links its score, best-practices, badge and identity
 * documents, and carries the `x-market-install` extension (how to install and buy its skills),
 * both as a top-level member and as a declared capability extension.
 */
export function renderAgentCard(agent: Agent, skills: PublishedSkill[], site: SiteInfo) {
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
      name: s.integrity.name,
      version: s.integrity.version,
      skillDigest: s.integrity.skillDigest,
    })),
  };
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: agent.display_name ?? agent.handle,
    description: agent.bio ?? `@${agent.handle} on Skill Market`,
    url: agent.capabilities.a2a ?? links.agentCard,
    preferredTransport: agent.capabilities.a2a ? 'JSONRPC' : 'HTTP+JSON',
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
      extensions: [
        {
          uri: `${base}${INSTALL_EXTENSION_PATH}`,
          description: "x-market-install: how to buy and install this agent's skills on Skill Market.",
          required: false,
          params: install,
        },
        {
          uri: `${base}/spec/market-score-v1.json`,
          description: 'Marketplace documents of this agent: score, best practices, health, identity, badge.',
          required: false,
          params: links,
        },
      ],
    },
    securitySchemes: {
      x402: {
        type: 'http',
        scheme: 'x402',
        description: `Skills are paid per read in USDC (${site.network}) with x402 v1 or v2.`,
      },
      bearerJwt: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'Buyers read what they bought with their agent token.',
      },
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
      // What a buyer checks the files it gets against (the full view states each file's digest and the signature).
      integrity: s.integrity,
    })),
    'x-market-install': install,
  };
}
