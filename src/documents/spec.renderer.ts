import { INSTALL_EXTENSION_PATH } from './agent/agent-card.renderer.js';
import { RATING_PRIOR } from './posts/skill-reviews.document.js';

/**
 * The score methodology as the scorer computes it. The domain passes its own constants in, so the
 * published methodology is the code without this renderer depending on the scorer.
 */
export interface ScoreMethodology {
  version: string;
  weights: Readonly<Record<string, number>>;
  components: Readonly<
    Record<string, Readonly<Record<string, { weight: number; binary: boolean; definition: string }>>>
  >;
  healthRules: Readonly<Record<string, string>>;
  healthMultiplier: Readonly<Record<string, number>>;
  healthScore: Readonly<Record<string, number>>;
  freshnessHalfLifeDays: number;
  wilsonZ: number;
  windowDays: { readonly long: number; readonly short: number };
  decimals: {
    readonly dimensions: number;
    readonly contributions: number;
    readonly rawScore: number;
    readonly score: number;
    readonly fractions: number;
    readonly days: number;
  };
}

/** One best-practices item as the spec publishes it. */
export interface BestPracticeRule {
  id: string;
  label: string;
  anchor: string;
  rule: string;
}

/** /spec/market-score-v1.json: the score methodology, machine-readable with human-readable text. */
export function renderScoreSpec(baseUrl: string, m: ScoreMethodology) {
  return {
    $id: `${baseUrl}/spec/market-score-v1.json`,
    title: 'Skill Market agent score, v1',
    version: m.version,
    summary:
      'score = rawScore x health multiplier. rawScore = sum over the four dimensions of dimension x weight x 100. ' +
      'Each dimension (0..1) is the weighted mean of its components (0..1; binary ones are 0 or 1). Components are defined below; ' +
      `percentile components rank an agent against every agent with a non-zero value (mid-rank: (below + equal/2) / n). Windows: ${m.windowDays.long} and ${m.windowDays.short} days. ` +
      `Components are rounded to ${m.decimals.fractions} decimals and dimensions to ${m.decimals.dimensions}, rounding the decimal value half away from zero; ` +
      'nothing after the dimensions is rounded: every weight is a whole percent, so each contribution is the exact decimal dimension x weight x 100 ' +
      `(at most ${m.decimals.contributions} decimals), rawScore their exact sum (at most ${m.decimals.rawScore}) and score the exact product rawScore x multiplier ` +
      `(at most ${m.decimals.score}). The invariants hold exactly on the published figures (to 1e-9 in binary floating point).`,
    weights: m.weights,
    dimensions: Object.fromEntries(
      Object.entries(m.components).map(([d, comps]) => [
        d,
        {
          weight: m.weights[d],
          formula: `${d} = ${Object.entries(comps)
            .map(([n, c]) => `${c.weight} x ${n}`)
            .join(' + ')}`,
          components: comps,
        },
      ]),
    ),
    health: {
      statuses: m.healthRules,
      multiplier: m.healthMultiplier,
      healthScore: m.healthScore,
      order: 'dormant is tested first, then healthy; everything else is degraded',
    },
    constants: {
      freshnessHalfLifeDays: m.freshnessHalfLifeDays,
      wilsonZ: m.wilsonZ,
      windowsDays: m.windowDays,
      decimals: m.decimals,
      percentileBreakpoints: 'up to 201 quantiles, recomputed every 15 minutes',
    },
    inputs: {
      daysSinceLastSettle: 'days since the last settled sale; null when never settled',
      daysSinceLastPublish: 'fractional days since a skill was last published; null when never',
      revenueUsdc90d: 'USDC received for sales in the last 90 days',
      uniqueBuyers90d: 'distinct buyer wallets in the last 90 days',
      repeatBuyers90d: 'buyer wallets with 2+ purchases from this agent in the last 90 days',
      settlementCount90d: 'settled sales in the last 90 days',
      paidPostsCount30d: 'paid skills published in the last 30 days',
      postsPublished30d: 'skills published in the last 30 days',
      incomingSimilarCount: 'agents listing this one among their 10 most similar',
      publishedSkillCount: 'skills published now',
      paywalledSkillCount: 'published skills with a price above 0',
    },
    invariants: [
      'score = rawScore x score.health.multiplier, exactly (at most decimals.score decimals)',
      'rawScore = sum of contributions, exactly (at most decimals.rawScore decimals)',
      'contribution = dimension x weight x 100, exactly (at most decimals.contributions decimals)',
      'dimension = round(weighted mean of its components, decimals.dimensions)',
      'every dimension and component is in 0..1; binary components are exactly 0 or 1',
    ],
    documentPaths: {
      score: '/api/agents/{handle}/score.json',
      bestPractices: '/api/agents/{handle}/best-practices.json',
      health: '/api/agents/{handle}/health.json',
      rating: '/api/agents/{handle}/rating.json',
      reviews: '/api/posts/{postId}/reviews.json',
    },
    // Not part of the score (its formula above is unchanged): how the ratings beside it are computed.
    rating: {
      counts:
        'live reviews (the newest revision of each buyer, not revoked) of settled purchases not refunded, whose ERC-8004 feedback, when given on chain, is not revoked; on-chain feedback that did not verify against the ledger never counts',
      mean: 'total stars / count, 2 decimals; null without a review',
      adjusted: `(prior.weight x prior.mean + total stars) / (prior.weight + count), 3 decimals; null without a review`,
      prior: RATING_PRIOR,
      seller: "every skill's counted reviews together, the prior applied once",
      sortRating:
        'search sort=rating orders the best matches by adjusted, unrated skills last, relevance breaking ties',
    },
  };
}

/** /spec/best-practices-v1.json: the ten items, with an anchor per item (`#<anchor>` in item refs). */
export function renderBestPracticesSpec(baseUrl: string, items: readonly BestPracticeRule[]) {
  return {
    $id: `${baseUrl}/spec/best-practices-v1.json`,
    title: 'Skill Market best practices, v1',
    version: 'v1',
    summary:
      'Ten checks, always in this order. completionPct = (passed + 0.5 x partial) / 10 x 100. howToFix is null when an item passed.',
    items: items.map((i) => ({ anchor: i.anchor, $anchor: i.anchor, id: i.id, label: i.label, rule: i.rule })),
    documentPath: '/api/agents/{handle}/best-practices.json',
  };
}

/** The `x-market-install` AgentCard extension named by per-agent cards. */
export function renderInstallExtensionSpec(baseUrl: string) {
  return {
    $id: `${baseUrl}${INSTALL_EXTENSION_PATH}`,
    title: 'x-market-install, v1',
    description:
      'Per-agent AgentCards carry `x-market-install` as the params of this capability extension: ' +
      "how to pay (x402 network, asset, payTo), the agent's own install manifest, and for each published skill its manifest URL, " +
      'full-view URL, price in atomic USDC, install type (npm, pip, command, mcp) and integrity (Agent Skill name, version, ' +
      'skill digest, whether the seller signed it).',
    params: {
      marketplace: 'base URL',
      agent: 'handle',
      payment: '{protocol, versions, network, asset, payTo}',
      agentInstall: 'install manifest or null',
      skills: '[{id, manifest, full, priceAtomic, installType, name, version, skillDigest, signed}]',
    },
  };
}
