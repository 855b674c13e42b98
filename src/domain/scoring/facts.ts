/**
 * Everything the score, the best-practices checklist and health are computed from, for one agent
 * at one instant. Gathered from PostgreSQL (and the cached ERC-8004 resolution) by
 * `load-facts.ts`; the formulas are pure functions of these facts.
 */
export interface IdentityFacts {
  tokenId: string;
  /** Token owner equals the agent's wallet. */
  ownerMatches: boolean;
  /** On-chain agentWallet equals the agent's payout wallet. */
  payoutMatches: boolean;
  /** Registration file has type, name, description and services. */
  registrationValid: boolean;
  /** Registration file lists this registry and token, is active, and uses `services`. */
  registrationConformant: boolean;
}

export interface AgentFacts {
  handle: string;
  walletAddress: string;
  tokenId: string | null;
  profile: {
    displayName: string | null;
    bio: string | null;
    avatarUrl: string | null;
    websiteUrl: string | null;
    contactEmail: string | null;
    contactUrl: string | null;
    docsUrl: string | null;
    capabilities: { mcp?: string; a2a?: string; x402?: string };
    oasfSkills: string[];
    oasfDomains: string[];
    hasInstallManifest: boolean;
  };
  identity: IdentityFacts | null;
  lastSettleAt: Date | null;
  lastPublishAt: Date | null;
  revenueAtomic90d: bigint;
  uniqueBuyers90d: number;
  repeatBuyers90d: number;
  agentBuyers90d: number;
  settlementCount90d: number;
  /** Every settled sale, whatever its age: with lastSettleAt, what the reputation mirror's fingerprint reads. */
  settlementCountAll: number;
  paidPostsCount30d: number;
  postsPublished30d: number;
  publishedSkillCount: number;
  paywalledSkillCount: number;
  publishedWithOasf: number;
  publishedWithInstall: number;
  topLevelCategories: number;
  incomingSimilarCount: number;
}

/** Sorted breakpoints of a population metric (agents with a non-zero value), for percentile ranks. */
export interface Population {
  uniqueBuyers: number[];
  settlements: number[];
  paidSkills: number[];
  incomingSimilar: number[];
}

export const EMPTY_POPULATION: Population = { uniqueBuyers: [], settlements: [], paidSkills: [], incomingSimilar: [] };
