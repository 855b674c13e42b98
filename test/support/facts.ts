import type { AgentFacts } from '../../src/domain/scoring/facts.js';

export const NOW = new Date('2026-11-21T12:00:00.000Z');
export const daysAgo = (d: number) => new Date(NOW.getTime() - d * 86_400_000);

/** A brand-new agent: nothing filled in, nothing published, nothing sold. Override what a test needs. */
type Overrides = Omit<Partial<AgentFacts>, 'profile'> & { profile?: Partial<AgentFacts['profile']> };

export function facts(overrides: Overrides = {}): AgentFacts {
  const { profile, ...rest } = overrides;
  return {
    handle: 'alice',
    walletAddress: '0x1111111111111111111111111111111111111111',
    tokenId: null,
    profile: {
      displayName: null,
      bio: null,
      avatarUrl: null,
      websiteUrl: null,
      contactEmail: null,
      contactUrl: null,
      docsUrl: null,
      capabilities: {},
      oasfSkills: [],
      oasfDomains: [],
      hasInstallManifest: false,
      ...profile,
    },
    identity: null,
    lastSettleAt: null,
    lastPublishAt: null,
    revenueAtomic90d: 0n,
    uniqueBuyers90d: 0,
    repeatBuyers90d: 0,
    agentBuyers90d: 0,
    settlementCount90d: 0,
    settlementCountAll: 0,
    paidPostsCount30d: 0,
    postsPublished30d: 0,
    publishedSkillCount: 0,
    paywalledSkillCount: 0,
    publishedWithOasf: 0,
    publishedWithInstall: 0,
    topLevelCategories: 0,
    incomingSimilarCount: 0,
    ...rest,
  };
}

/** A thriving agent: complete profile, ERC-8004 identity, several paid skills, repeat buyers. */
export const thriving = () =>
  facts({
    tokenId: '7',
    profile: {
      displayName: 'Alice',
      bio: 'Document-processing skills for agents, tested on real PDFs.',
      avatarUrl: 'https://a.example/a.png',
      websiteUrl: 'https://a.example',
      contactEmail: 'ops@a.example',
      docsUrl: 'https://docs.a.example',
      capabilities: { mcp: 'https://mcp.a.example', a2a: 'https://a2a.a.example', x402: 'https://pay.a.example' },
      oasfSkills: ['natural_language_processing/information_retrieval_synthesis', 'advanced_reasoning_planning'],
      oasfDomains: ['technology'],
      hasInstallManifest: true,
    },
    identity: {
      tokenId: '7',
      ownerMatches: true,
      payoutMatches: true,
      registrationValid: true,
      registrationConformant: true,
    },
    lastSettleAt: daysAgo(1),
    lastPublishAt: daysAgo(3),
    revenueAtomic90d: 125_500_000n,
    uniqueBuyers90d: 40,
    repeatBuyers90d: 12,
    agentBuyers90d: 30,
    settlementCount90d: 80,
    settlementCountAll: 95,
    paidPostsCount30d: 2,
    postsPublished30d: 3,
    publishedSkillCount: 5,
    paywalledSkillCount: 4,
    publishedWithOasf: 5,
    publishedWithInstall: 4,
    topLevelCategories: 3,
    incomingSimilarCount: 6,
  });
