import { createHash } from 'node:crypto';

/**
 * Score v1: the one definition of every weight, component and threshold. The scorer computes from
 * it and `/spec/market-score-v1.json` publishes it, so the published methodology is the code.
 */
export const SCORE_VERSION = 'v1';

export const DIMENSION_WEIGHTS = { transparency: 0.25, reliability: 0.3, reputation: 0.35, ecosystem: 0.1 } as const;
export type Dimension = keyof typeof DIMENSION_WEIGHTS;

export const HEALTH_MULTIPLIER = { healthy: 1, degraded: 0.85, dormant: 0 } as const;
export const HEALTH_SCORE = { healthy: 1, degraded: 0.6, dormant: 0 } as const;

/** Days over which freshness halves (exponential decay, half-life). */
export const FRESHNESS_HALF_LIFE_DAYS = 14;
/** z of the Wilson lower bound (95% two-sided). */
export const WILSON_Z = 1.96;
export const WINDOW_DAYS = { long: 90, short: 30 } as const;

/** Decimal places of a number's shortest decimal form: 0.85 has 2, 25 has 0, 1e-7 has 7. */
export function decimalPlaces(x: number): number {
  const [mantissa = '', exponent = '0'] = String(Math.abs(x)).split('e');
  return Math.max(0, (mantissa.split('.')[1] ?? '').length - Number(exponent));
}

const DIMENSION_DECIMALS = 4;
// Weights are whole percents, so dimension x weight x 100 has no more decimals than the dimension.
for (const [d, w] of Object.entries(DIMENSION_WEIGHTS))
  if (decimalPlaces(w) > 2) throw new Error(`the weight of ${d} (${w}) is not a whole percent`);
const MULTIPLIER_DECIMALS = Math.max(...Object.values(HEALTH_MULTIPLIER).map(decimalPlaces));

/**
 * Decimals each published figure keeps. Of the score's figures only the dimensions are rounded
 * (to 4 places); every point figure is then the exact product or sum of published figures, with
 * the decimals that product or sum has: a contribution (dimension x weight x 100, the weights
 * whole percents) 4, rawScore (their sum) 4, score (rawScore x a multiplier of 2 decimals) 6. So
 * `contribution = dimension x weight x 100`, `rawScore = sum of contributions` and
 * `score = rawScore x multiplier` hold exactly on the published numbers. Components, the trending
 * figures (`fractions`) and fractional days keep 6. Rounding is of the decimal value, half away
 * from zero, like PostgreSQL's `round(numeric, n)`.
 */
export const DECIMALS = {
  dimensions: DIMENSION_DECIMALS,
  contributions: DIMENSION_DECIMALS,
  rawScore: DIMENSION_DECIMALS,
  score: DIMENSION_DECIMALS + MULTIPLIER_DECIMALS,
  fractions: 6,
  days: 6,
} as const;

/** `x` rounded to `decimals` places of its decimal form (1.005 to 2 places is 1.01, not 1.00). */
export function roundTo(x: number, decimals: number): number {
  // From 2^53 on a double has no fractional part left to round.
  if (!Number.isFinite(x) || Math.abs(x) >= 2 ** 53) return x;
  // Scaled in binary, `x` is off its decimal form by a few units of its last place: wherever that
  // cannot move it across a half, the rounding is the decimal form's, and the integer over the
  // power of ten (a correctly rounded division of exact integers) is the double the decimal text
  // parses to. A score rounds about thirty figures; the decimal text below is several times slower.
  if (Number.isInteger(decimals) && decimals >= 0 && decimals <= 15) {
    const scale = 10 ** decimals;
    const scaled = Math.abs(x) * scale;
    if (scaled < 2 ** 52) {
      const whole = Math.floor(scaled);
      const fraction = scaled - whole;
      if (Math.abs(fraction - 0.5) > 1e-9 * (whole + 1))
        return Math.sign(x) * ((fraction < 0.5 ? whole : whole + 1) / scale) || 0;
    }
  }
  const [mantissa, exponent = '0'] = String(Math.abs(x)).split('e');
  const shifted = Math.round(Number(`${mantissa}e${Number(exponent) + decimals}`));
  // Shifted past 1e21 (written in exponent form), the decimal form's 17 significant digits all lie
  // before the place rounded to: nothing to round.
  if (shifted >= 1e21) return x;
  return Math.sign(x) * Number(`${shifted}e-${decimals}`) || 0;
}

export interface ComponentSpec {
  weight: number;
  binary: boolean;
  definition: string;
}

/** Each dimension is the weighted mean of its components (weights sum to 1 within a dimension). */
export const COMPONENTS: Record<Dimension, Record<string, ComponentSpec>> = {
  transparency: {
    declaredEndpoints: {
      weight: 0.2,
      binary: false,
      definition: 'share of the three capability endpoints (MCP, A2A, x402) declared in the profile: n/3',
    },
    oasfTaxonomyCoverage: {
      weight: 0.15,
      binary: false,
      definition: '0.5 x min(1, profile OASF skills / 2) + 0.5 x min(1, profile OASF domains / 1)',
    },
    profileCompleteness: {
      weight: 0.2,
      binary: false,
      definition:
        'share of six profile basics present: display name, bio of 30+ characters, avatar, website, contact, documentation',
    },
    installManifestPresent: {
      weight: 0.1,
      binary: true,
      definition: '1 if the profile or any published skill carries an install manifest',
    },
    docsUrlPresent: { weight: 0.1, binary: true, definition: '1 if a documentation URL is set' },
    contactMethodPresent: { weight: 0.1, binary: true, definition: '1 if a contact e-mail or contact URL is set' },
    specConformantRegistration: {
      weight: 0.15,
      binary: true,
      definition:
        '1 if the agent has an ERC-8004 identity owned by its wallet whose registration file has type, name, description and services',
    },
  },
  reliability: {
    healthScore: { weight: 0.35, binary: false, definition: 'health status: healthy 1, degraded 0.6, dormant 0' },
    settleFreshness: {
      weight: 0.2,
      binary: false,
      definition: `0.5 ^ (daysSinceLastSettle / ${FRESHNESS_HALF_LIFE_DAYS}); 0 when never settled`,
    },
    publishFreshness: {
      weight: 0.2,
      binary: false,
      definition: `0.5 ^ (daysSinceLastPublish / ${FRESHNESS_HALF_LIFE_DAYS}); 0 when never published`,
    },
    payoutCanonical: {
      weight: 0.15,
      binary: true,
      definition: "1 if the payout wallet equals the ERC-8004 token's on-chain agentWallet",
    },
    specConformance: {
      weight: 0.1,
      binary: true,
      definition:
        '1 if the registration file lists this registry and token in `registrations`, is `active`, and uses `services` (not the deprecated `endpoints`)',
    },
  },
  reputation: {
    repeatBuyerWilson: {
      weight: 0.3,
      binary: false,
      definition: `Wilson lower bound (z = ${WILSON_Z}) of repeatBuyers90d / uniqueBuyers90d; 0 without buyers`,
    },
    uniqueBuyerQuantile: {
      weight: 0.25,
      binary: false,
      definition: 'mid-rank percentile of uniqueBuyers90d among agents with at least one buyer; 0 without buyers',
    },
    settlementCountQuantile: {
      weight: 0.25,
      binary: false,
      definition: 'mid-rank percentile of settlementCount90d among agents with at least one settlement; 0 without',
    },
    payoutCaptureBonus: {
      weight: 0.1,
      binary: true,
      definition: '1 if payoutCanonical and at least one settlement in 90 days: revenue reached the canonical wallet',
    },
    signalRatio: {
      weight: 0.1,
      binary: false,
      definition: 'share of 90-day buyers that are registered agents (identified demand rather than anonymous wallets)',
    },
  },
  ecosystem: {
    paidSkillsPublishedQuantile: {
      weight: 0.3,
      binary: false,
      definition: 'mid-rank percentile of paywalled published skills among agents with at least one',
    },
    oasfCoverage: {
      weight: 0.15,
      binary: false,
      definition: 'share of published skills tagged with at least one OASF skill or domain',
    },
    incomingSimilarQuantile: {
      weight: 0.2,
      binary: false,
      definition:
        'mid-rank percentile of how many agents list this one among their 10 most similar, among agents listed at least once',
    },
    categoryBreadth: {
      weight: 0.15,
      binary: false,
      definition: 'min(1, distinct top-level OASF categories across published skills / 3)',
    },
    installabilityScore: {
      weight: 0.2,
      binary: false,
      definition: 'share of published skills whose current version has an install manifest',
    },
  },
};

export const HEALTH_RULES = {
  dormant: `no skill published and no settlement in the last ${WINDOW_DAYS.long} days`,
  healthy: `contact method and documentation URL set, at least 2 published skills, and a publish or settlement in the last ${WINDOW_DAYS.short} days`,
  degraded:
    'every other agent: active in the last 90 days but missing something healthy needs (for example one recent skill and no docs)',
} as const;

/**
 * A fingerprint of everything above a score is computed with: a score document's identity carries
 * it in place of the figures computed from the components, so changing any of them changes every
 * identity and every score document is written again.
 */
export const METHODOLOGY_FINGERPRINT = createHash('sha256')
  .update(
    JSON.stringify([
      SCORE_VERSION,
      COMPONENTS,
      DIMENSION_WEIGHTS,
      HEALTH_MULTIPLIER,
      HEALTH_SCORE,
      FRESHNESS_HALF_LIFE_DAYS,
      WILSON_Z,
      WINDOW_DAYS,
      DECIMALS,
      HEALTH_RULES,
    ]),
  )
  .digest('hex');
