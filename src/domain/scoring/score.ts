import type { AgentFacts, Population } from './facts.js';
import {
  COMPONENTS,
  DECIMALS,
  DIMENSION_WEIGHTS,
  FRESHNESS_HALF_LIFE_DAYS,
  HEALTH_MULTIPLIER,
  HEALTH_SCORE,
  SCORE_VERSION,
  WILSON_Z,
  WINDOW_DAYS,
  roundTo,
  type Dimension,
} from './methodology.js';
import { bestPractices, type BestPractices } from './best-practices.js';
import { healthOf, type HealthStatus } from './health.js';

const DAY_MS = 86_400_000;
const clamp01 = (x: number) => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);
const fraction = (x: number) => roundTo(x, DECIMALS.fractions);
/** `x`, a figure of `decimals` places, as the integer count of its last place (0.0667 at 4 places is 667). */
const unitsOf = (x: number, decimals: number) => Math.round(x * 10 ** decimals);
/** A count of `decimals` places as the number nearest that decimal: one correctly rounded division of exact integers. */
const fromUnits = (n: number, decimals: number) => n / 10 ** decimals;
const bit = (b: boolean) => (b ? 1 : 0);

/** Wilson score lower bound of a proportion k/n; 0 when n = 0. */
export function wilsonLower(k: number, n: number, z = WILSON_Z): number {
  if (n <= 0) return 0;
  const p = k / n;
  const z2 = z * z;
  return (p + z2 / (2 * n) - z * Math.sqrt((p * (1 - p) + z2 / (4 * n)) / n)) / (1 + z2 / n);
}

/**
 * Mid-rank percentile of x within sorted `population` (values > 0): (below + equal/2) / n.
 * 0 for x <= 0 or an empty population.
 */
export function percentile(x: number, population: number[]): number {
  if (x <= 0 || population.length === 0) return 0;
  let below = 0;
  let equal = 0;
  for (const v of population) {
    if (v < x) below++;
    else if (v === x) equal++;
  }
  return (below + equal / 2) / population.length;
}

export const freshness = (days: number | null) =>
  days === null ? 0 : 0.5 ** (Math.max(0, days) / FRESHNESS_HALF_LIFE_DAYS);

const daysSince = (d: Date | null, now: Date) =>
  d ? roundTo((now.getTime() - d.getTime()) / DAY_MS, DECIMALS.days) : null;

export function inputsOf(f: AgentFacts, now: Date) {
  return {
    daysSinceLastSettle: daysSince(f.lastSettleAt, now),
    daysSinceLastPublish: daysSince(f.lastPublishAt, now),
    revenueUsdc90d: Number(f.revenueAtomic90d) / 1e6,
    uniqueBuyers90d: f.uniqueBuyers90d,
    repeatBuyers90d: f.repeatBuyers90d,
    settlementCount90d: f.settlementCount90d,
    paidPostsCount30d: f.paidPostsCount30d,
    postsPublished30d: f.postsPublished30d,
    incomingSimilarCount: f.incomingSimilarCount,
    publishedSkillCount: f.publishedSkillCount,
    paywalledSkillCount: f.paywalledSkillCount,
  };
}
export type ScoreInputs = ReturnType<typeof inputsOf>;

/** The 22 components, each in 0..1 (binary ones exactly 0 or 1), rounded to 6 decimals. */
export function componentsOf(f: AgentFacts, inputs: ScoreInputs, health: HealthStatus, pop: Population) {
  const p = f.profile;
  const caps = ['mcp', 'a2a', 'x402'].filter((k) => Boolean(p.capabilities[k as 'mcp'])).length;
  const basics = [
    p.displayName,
    p.bio && p.bio.length >= 30 ? p.bio : null,
    p.avatarUrl,
    p.websiteUrl,
    p.contactEmail || p.contactUrl,
    p.docsUrl,
  ].filter(Boolean).length;
  const id = f.identity;
  const published = f.publishedSkillCount;
  const payoutCanonical = Boolean(id?.ownerMatches && id.payoutMatches);
  const raw = {
    transparency: {
      declaredEndpoints: caps / 3,
      oasfTaxonomyCoverage: 0.5 * Math.min(1, p.oasfSkills.length / 2) + 0.5 * Math.min(1, p.oasfDomains.length),
      profileCompleteness: basics / 6,
      installManifestPresent: bit(p.hasInstallManifest || f.publishedWithInstall > 0),
      docsUrlPresent: bit(Boolean(p.docsUrl)),
      contactMethodPresent: bit(Boolean(p.contactEmail || p.contactUrl)),
      specConformantRegistration: bit(Boolean(id?.ownerMatches && id.registrationValid)),
    },
    reliability: {
      healthScore: HEALTH_SCORE[health],
      settleFreshness: freshness(inputs.daysSinceLastSettle),
      publishFreshness: freshness(inputs.daysSinceLastPublish),
      payoutCanonical: bit(payoutCanonical),
      specConformance: bit(Boolean(id?.ownerMatches && id.registrationConformant)),
    },
    reputation: {
      repeatBuyerWilson: wilsonLower(f.repeatBuyers90d, f.uniqueBuyers90d),
      uniqueBuyerQuantile: percentile(f.uniqueBuyers90d, pop.uniqueBuyers),
      settlementCountQuantile: percentile(f.settlementCount90d, pop.settlements),
      payoutCaptureBonus: bit(payoutCanonical && f.settlementCount90d > 0),
      signalRatio: f.uniqueBuyers90d ? f.agentBuyers90d / f.uniqueBuyers90d : 0,
    },
    ecosystem: {
      paidSkillsPublishedQuantile: percentile(f.paywalledSkillCount, pop.paidSkills),
      oasfCoverage: published ? f.publishedWithOasf / published : 0,
      incomingSimilarQuantile: percentile(f.incomingSimilarCount, pop.incomingSimilar),
      categoryBreadth: Math.min(1, f.topLevelCategories / 3),
      installabilityScore: published ? f.publishedWithInstall / published : 0,
    },
  };
  const out = {} as Record<Dimension, Record<string, number>>;
  for (const d of Object.keys(raw) as Dimension[]) {
    out[d] = Object.fromEntries(Object.entries(raw[d]).map(([k, v]) => [k, fraction(clamp01(v))]));
  }
  return out;
}

/**
 * The `score` object of the score document. Dimensions are weighted means of components, rounded
 * to DECIMALS.dimensions; contribution = dimension x weight x 100; rawScore = the sum of
 * contributions; score = rawScore x health multiplier. The points are computed in integers of
 * their last decimal place from the published dimensions and never rounded, so every invariant
 * holds exactly on the published figures.
 */
export function scoreOf(f: AgentFacts, pop: Population, now: Date, methodologyUrl: string) {
  const inputs = inputsOf(f, now);
  const health = healthOf(f, now);
  const components = componentsOf(f, inputs, health, pop);
  const dimensions = {} as Record<Dimension, number>;
  const contributions = {} as Record<Dimension, number>;
  // Counts of 1e-4 points (DECIMALS.contributions): a dimension's count times its whole-percent weight.
  let rawUnits = 0;
  for (const d of Object.keys(DIMENSION_WEIGHTS) as Dimension[]) {
    let sum = 0;
    for (const [name, spec] of Object.entries(COMPONENTS[d])) {
      const value = components[d][name];
      if (value === undefined) throw new Error(`the methodology's component ${d}.${name} is not computed`);
      sum += spec.weight * value;
    }
    dimensions[d] = roundTo(clamp01(sum), DECIMALS.dimensions);
    const units = unitsOf(dimensions[d], DECIMALS.dimensions) * Math.round(DIMENSION_WEIGHTS[d] * 100);
    contributions[d] = fromUnits(units, DECIMALS.contributions);
    rawUnits += units;
  }
  const multiplier = HEALTH_MULTIPLIER[health];
  const multiplierDecimals = DECIMALS.score - DECIMALS.rawScore;
  return {
    inputs,
    health,
    score: {
      score: fromUnits(rawUnits * unitsOf(multiplier, multiplierDecimals), DECIMALS.score),
      rawScore: fromUnits(rawUnits, DECIMALS.rawScore),
      dimensions,
      contributions,
      components,
      health: { status: health, multiplier },
      weights: { ...DIMENSION_WEIGHTS },
      methodology: methodologyUrl,
      version: SCORE_VERSION,
      computedAt: now.toISOString(),
    },
  };
}

export interface ScoreDocumentContext {
  baseUrl: string;
  source: string;
}

/** The whole score document, per the seed: $schema, source, subject, score, bestPractices, inputs, methodology, computedAt. */
export function scoreDocument(f: AgentFacts, pop: Population, now: Date, ctx: ScoreDocumentContext) {
  const methodology = `${ctx.baseUrl}/spec/market-score-v1.json`;
  const { score, inputs } = scoreOf(f, pop, now, methodology);
  const bp: BestPractices = bestPractices(f, now, ctx.baseUrl);
  return {
    $schema: methodology,
    source: ctx.source,
    subject: { handle: f.handle, walletAddress: f.walletAddress, tokenId: f.tokenId },
    score,
    bestPractices: bp,
    inputs,
    methodology,
    computedAt: now.toISOString(),
  };
}
export type ScoreDocument = ReturnType<typeof scoreDocument>;

export { WINDOW_DAYS };
