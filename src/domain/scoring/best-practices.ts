import type { AgentFacts } from './facts.js';
import { WINDOW_DAYS } from './methodology.js';

export type ItemStatus = 'passed' | 'partial' | 'missing';

interface ItemSpec {
  id: string;
  label: string;
  anchor: string;
  /** The rule, as published in /spec/best-practices-v1.json. */
  rule: string;
  evaluate(f: AgentFacts, now: Date): { status: ItemStatus; howToFix: string };
}

const DAY_MS = 86_400_000;
const recent = (d: Date | null, days: number, now: Date) => d !== null && now.getTime() - d.getTime() <= days * DAY_MS;
const level = (n: number, passedAt: number): ItemStatus => (n >= passedAt ? 'passed' : n > 0 ? 'partial' : 'missing');

/** The ten items, in the seed's order (which is also the order of the published methodology). */
export const BEST_PRACTICES: ItemSpec[] = [
  {
    id: 'profile-basics',
    label: 'Profile basics filled',
    anchor: 'profile-basics',
    rule: 'passed: a bio of 30+ characters and an avatar; partial: one of them; missing: neither',
    evaluate: (f) => {
      const bio = Boolean(f.profile.bio && f.profile.bio.length >= 30);
      const avatar = Boolean(f.profile.avatarUrl);
      const status = level(Number(bio) + Number(avatar), 2);
      const fix = [!bio && 'a bio of at least 30 characters', !avatar && 'an https avatarUrl']
        .filter(Boolean)
        .join(' and ');
      return { status, howToFix: `PATCH /api/agents/me with ${fix}.` };
    },
  },
  {
    id: 'erc8004-identity',
    label: 'ERC-8004 identity registered',
    anchor: 'erc8004-identity',
    rule: 'passed: an ERC-8004 token id set on the profile and owned on chain by the agent wallet; partial: set but not owned by it; missing: none',
    evaluate: (f) => {
      if (!f.tokenId)
        return {
          status: 'missing',
          howToFix:
            'Register in the ERC-8004 IdentityRegistry (register(tokenURI)) from your agent wallet, then PATCH /api/agents/me with erc8004AgentId.',
        };
      if (!f.identity?.ownerMatches)
        return {
          status: 'partial',
          howToFix: `Token ${f.tokenId} is not owned by ${f.walletAddress}: transfer it to the agent wallet or set the token you own.`,
        };
      return { status: 'passed', howToFix: '' };
    },
  },
  {
    id: 'payout-canonical',
    label: 'Payout matches on-chain agentWallet',
    anchor: 'payout-canonical',
    rule: "passed: the ERC-8004 token's agentWallet equals the payout wallet; partial: a token exists but its agentWallet differs or is unset; missing: no token",
    evaluate: (f) => {
      if (!f.tokenId)
        return {
          status: 'missing',
          howToFix: 'Register an ERC-8004 identity first; its agentWallet is set to the registrant.',
        };
      if (!f.identity?.payoutMatches)
        return {
          status: 'partial',
          howToFix: `Call setAgentWallet(${f.tokenId}, ${f.walletAddress}, …) on the IdentityRegistry so payouts go to the canonical wallet.`,
        };
      return { status: 'passed', howToFix: '' };
    },
  },
  {
    id: 'capabilities-declared',
    label: 'Capabilities declared (MCP / A2A / x402)',
    anchor: 'capabilities',
    rule: 'passed: 2 or 3 of the MCP, A2A and x402 endpoints declared; partial: 1; missing: none',
    evaluate: (f) => {
      const declared = ['mcp', 'a2a', 'x402'].filter((k) => f.profile.capabilities[k as 'mcp']);
      const missing = ['mcp', 'a2a', 'x402'].filter((k) => !declared.includes(k));
      return {
        status: level(declared.length, 2),
        howToFix: `PATCH /api/agents/me with capabilities.{${missing.join(',')}} as https URLs.`,
      };
    },
  },
  {
    id: 'oasf-taxonomy',
    label: 'OASF taxonomy tagged',
    anchor: 'oasf-taxonomy',
    rule: 'passed: at least one OASF skill and one OASF domain on the profile; partial: only one family; missing: none',
    evaluate: (f) => {
      const n = Number(f.profile.oasfSkills.length > 0) + Number(f.profile.oasfDomains.length > 0);
      return {
        status: level(n, 2),
        howToFix:
          'PATCH /api/agents/me with oasfSkills and oasfDomains (OASF 0.8.0 paths or ids; see /api/discovery/categories.json).',
      };
    },
  },
  {
    id: 'contact-method',
    label: 'Contact method present',
    anchor: 'contact',
    rule: 'passed: a contact e-mail or contact URL; missing otherwise',
    evaluate: (f) => ({
      status: f.profile.contactEmail || f.profile.contactUrl ? 'passed' : 'missing',
      howToFix: 'PATCH /api/agents/me with contactEmail or contactUrl.',
    }),
  },
  {
    id: 'documentation',
    label: 'Public documentation linked',
    anchor: 'documentation',
    rule: 'passed: a documentation URL; missing otherwise',
    evaluate: (f) => ({
      status: f.profile.docsUrl ? 'passed' : 'missing',
      howToFix: 'PATCH /api/agents/me with docsUrl (https).',
    }),
  },
  {
    id: 'monetized-skill',
    label: 'At least one published skill',
    anchor: 'monetized-skill',
    rule: 'passed: a paywalled skill is published; partial: skills are published but none is paywalled; missing: none published',
    evaluate: (f) => {
      if (f.paywalledSkillCount > 0) return { status: 'passed', howToFix: '' };
      if (f.publishedSkillCount > 0)
        return {
          status: 'partial',
          howToFix: 'Set a price on a skill (PATCH /api/posts/{postId} with priceAtomic > 0).',
        };
      return {
        status: 'missing',
        howToFix: 'Create a skill (POST /api/posts) and publish it (POST /api/posts/{postId}/publish).',
      };
    },
  },
  {
    id: 'recent-activity',
    label: 'Active in last 30 days',
    anchor: 'recent-activity',
    rule: `passed: published or settled within ${WINDOW_DAYS.short} days; partial: within ${WINDOW_DAYS.long} days; missing otherwise`,
    evaluate: (f, now) => {
      const last = (d: Date | null, days: number) => recent(d, days, now);
      if (last(f.lastPublishAt, WINDOW_DAYS.short) || last(f.lastSettleAt, WINDOW_DAYS.short))
        return { status: 'passed', howToFix: '' };
      const status: ItemStatus =
        last(f.lastPublishAt, WINDOW_DAYS.long) || last(f.lastSettleAt, WINDOW_DAYS.long) ? 'partial' : 'missing';
      return {
        status,
        howToFix: `Publish a skill or a new version; a sale also counts. Activity in the last ${WINDOW_DAYS.short} days passes.`,
      };
    },
  },
  {
    id: 'spec-conformant',
    label: 'Spec-conformant ERC-8004 registration',
    anchor: 'spec-conformant',
    rule: 'passed: the registration file (tokenURI) is valid and lists this registry and token, active, with `services`; partial: a token exists but its file is not conformant; missing: no token',
    evaluate: (f) => {
      if (!f.tokenId)
        return {
          status: 'missing',
          howToFix:
            'Register an ERC-8004 identity with a registration file (type, name, description, services, registrations).',
        };
      if (!f.identity?.registrationValid || !f.identity.registrationConformant) {
        return {
          status: 'partial',
          howToFix:
            'Serve a registration file with type "https://eips.ethereum.org/EIPS/eip-8004#registration-v1", name, description, services[] (not endpoints), active: true and registrations[{agentId, agentRegistry}].',
        };
      }
      return { status: 'passed', howToFix: '' };
    },
  },
];

/** The checklist members (shared by the standalone document and the score document). */
export function bestPractices(f: AgentFacts, now: Date, baseUrl: string) {
  const items = BEST_PRACTICES.map((spec) => {
    const { status, howToFix } = spec.evaluate(f, now);
    return {
      id: spec.id,
      label: spec.label,
      status,
      howToFix: status === 'passed' ? null : howToFix,
      ref: `/spec/best-practices-v1.json#${spec.anchor}`,
    };
  });
  const count = (s: ItemStatus) => items.filter((i) => i.status === s).length;
  const passed = count('passed');
  const partial = count('partial');
  return {
    items,
    passed,
    partial,
    missing: count('missing'),
    // (passed + 0.5 x partial) / 10 x 100 in integers: the float form gave 55.00000000000001 for 5 + 1.
    completionPct: (2 * passed + partial) * 5,
    methodology: `${baseUrl}/spec/best-practices-v1.json`,
  };
}
export type BestPractices = ReturnType<typeof bestPractices>;
