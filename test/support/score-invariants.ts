import { expect } from 'chai';

/** A number as JSON prints it, read as an exact decimal: units x 10^-scale. */
interface Decimal {
  units: bigint;
  scale: number;
}

/** The exact decimal a JSON number stands for (what a reader of the document parses). */
export function decimalOf(v: number): Decimal {
  expect(v, 'a finite number').to.be.a('number').and.satisfy(Number.isFinite);
  const [mantissa = '', exponent = '0'] = JSON.stringify(v).toLowerCase().split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const scale = fraction.length - Number(exponent);
  const units = BigInt(`${whole}${fraction}`);
  return scale >= 0 ? { units, scale } : { units: units * 10n ** BigInt(-scale), scale: 0 };
}

const atScale = (d: Decimal, scale: number) => d.units * 10n ** BigInt(scale - d.scale);
const times = (a: Decimal, b: Decimal): Decimal => ({ units: a.units * b.units, scale: a.scale + b.scale });
const plus = (a: Decimal, b: Decimal): Decimal => {
  const scale = Math.max(a.scale, b.scale);
  return { units: atScale(a, scale) + atScale(b, scale), scale };
};
const same = (a: Decimal, b: Decimal) => {
  const scale = Math.max(a.scale, b.scale);
  return atScale(a, scale) === atScale(b, scale);
};
const show = (d: Decimal) => `${d.units}e-${d.scale}`;

const DIMENSIONS = ['transparency', 'reliability', 'reputation', 'ecosystem'] as const;
/** The seed's weights and health multipliers. */
const SEED_WEIGHTS = { transparency: 0.25, reliability: 0.3, reputation: 0.35, ecosystem: 0.1 };
const SEED_MULTIPLIERS = { healthy: 1, degraded: 0.85, dormant: 0 };
const TOLERANCE = 1e-9;

/**
 * Checks the seed's invariants on a score document as published (the parsed JSON, not the
 * scorer's numbers): `contributions = dimensions x weights x 100`, `rawScore = sum of
 * contributions`, `score = rawScore x multiplier`, and the checklist's `completionPct =
 * (passed + 0.5 x partial) / 10 x 100`. Each holds to 1e-9 in floating point, and exactly on
 * the decimals the document prints.
 */
export function assertPublishedScoreInvariants(doc: any): void {
  const s = doc.score;
  expect(s.weights, 'the seed weights').to.deep.equal(SEED_WEIGHTS);
  expect(s.health.multiplier, `the multiplier of ${s.health.status}`).to.equal(
    SEED_MULTIPLIERS[s.health.status as keyof typeof SEED_MULTIPLIERS],
  );
  let sum = 0;
  let exactSum: Decimal = { units: 0n, scale: 0 };
  for (const d of DIMENSIONS) {
    const dimension = s.dimensions[d];
    const contribution = s.contributions[d];
    expect(dimension, d).to.be.within(0, 1);
    expect(contribution, `${d} = ${dimension} x ${s.weights[d]} x 100`).to.be.closeTo(
      dimension * s.weights[d] * 100,
      TOLERANCE,
    );
    const product = times(times(decimalOf(dimension), decimalOf(s.weights[d])), decimalOf(100));
    expect(same(decimalOf(contribution), product), `${d}: ${contribution} is exactly ${show(product)}`).to.equal(true);
    sum += contribution;
    exactSum = plus(exactSum, decimalOf(contribution));
    for (const [name, v] of Object.entries(s.components[d] as Record<string, number>))
      expect(v, `${d}.${name}`).to.be.within(0, 1);
  }
  expect(s.rawScore, 'rawScore = sum of contributions').to.be.closeTo(sum, TOLERANCE);
  expect(same(decimalOf(s.rawScore), exactSum), `rawScore ${s.rawScore} is exactly ${show(exactSum)}`).to.equal(true);
  expect(s.score, 'score = rawScore x multiplier').to.be.closeTo(s.rawScore * s.health.multiplier, TOLERANCE);
  const scaled = times(decimalOf(s.rawScore), decimalOf(s.health.multiplier));
  expect(same(decimalOf(s.score), scaled), `score ${s.score} is exactly ${show(scaled)}`).to.equal(true);
  assertCompletionPct(doc.bestPractices);
}

/**
 * `completionPct = (passed + 0.5 x partial) / 10 x 100`, with the counts those of the items, on the
 * standalone best-practices document or the score document's `bestPractices`.
 */
export function assertCompletionPct(checklist: any): void {
  const count = (status: string) => checklist.items.filter((i: { status: string }) => i.status === status).length;
  expect(checklist.items).to.have.length(10);
  expect(checklist.passed).to.equal(count('passed'));
  expect(checklist.partial).to.equal(count('partial'));
  expect(checklist.missing).to.equal(count('missing'));
  const { passed, partial, completionPct } = checklist;
  expect(completionPct).to.be.closeTo(((passed + 0.5 * partial) / 10) * 100, TOLERANCE);
  // (passed + partial / 2) / 10 x 100 = (2 passed + partial) x 5, a whole number.
  expect(
    same(decimalOf(completionPct), { units: BigInt((2 * passed + partial) * 5), scale: 0 }),
    completionPct,
  ).to.equal(true);
}
