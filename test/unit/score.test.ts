import { expect } from 'chai';
import fc from 'fast-check';
import { scoreDocument, scoreOf, wilsonLower, percentile, freshness } from '../../src/domain/scoring/score.js';
import { COMPONENTS, DIMENSION_WEIGHTS, roundTo } from '../../src/domain/scoring/methodology.js';
import { EMPTY_POPULATION, type Population } from '../../src/domain/scoring/facts.js';
import { facts, thriving, daysAgo, NOW } from '../support/facts.js';

const POP: Population = {
  uniqueBuyers: [1, 2, 3, 5, 8, 13, 40, 100],
  settlements: [1, 1, 2, 5, 10, 80, 200],
  paidSkills: [1, 1, 2, 4, 9],
  incomingSimilar: [1, 2, 6, 10],
};
const CTX = { baseUrl: 'https://market.example', source: 'skill-market' };
const EPS = 1e-9;

function assertInvariants(doc: ReturnType<typeof scoreDocument>) {
  const s = doc.score;
  let sum = 0;
  for (const d of Object.keys(DIMENSION_WEIGHTS) as Array<keyof typeof DIMENSION_WEIGHTS>) {
    expect(s.dimensions[d]).to.be.within(0, 1);
    expect(s.contributions[d]).to.equal(roundTo(s.dimensions[d] * DIMENSION_WEIGHTS[d] * 100, 2));
    sum += s.contributions[d];
    for (const [name, spec] of Object.entries(COMPONENTS[d])) {
      const v = s.components[d][name]!;
      expect(v, `${d}.${name}`).to.be.within(0, 1);
      if (spec.binary) expect([0, 1], `${d}.${name} is binary`).to.include(v);
    }
  }
  expect(s.rawScore).to.equal(roundTo(sum, 2));
  expect(s.score).to.equal(roundTo(s.rawScore * s.health.multiplier, 2));
  // What a reader sees: points with at most two decimals, fractions with at most six.
  for (const v of [s.score, s.rawScore, ...Object.values(s.contributions)]) expect(decimalsOf(v)).to.be.at.most(2);
  for (const v of [...Object.values(s.dimensions), ...Object.values(s.components).flatMap(Object.values)])
    expect(decimalsOf(v as number)).to.be.at.most(6);
}

/** Decimal places of a number as JSON prints it. */
const decimalsOf = (v: number) => (JSON.stringify(v).split('.')[1] ?? '').length;

describe('score v1', () => {
  it('has every member of the seed in its shape, with all 22 components and 11 inputs', () => {
    const doc = scoreDocument(thriving(), POP, NOW, CTX);
    expect(Object.keys(doc)).to.deep.equal([
      '$schema',
      'source',
      'subject',
      'score',
      'bestPractices',
      'inputs',
      'methodology',
      'computedAt',
    ]);
    expect(doc.$schema).to.equal('https://market.example/spec/market-score-v1.json');
    expect(doc.subject).to.deep.equal({
      handle: 'alice',
      walletAddress: '0x1111111111111111111111111111111111111111',
      tokenId: '7',
    });
    expect(Object.keys(doc.score)).to.deep.equal([
      'score',
      'rawScore',
      'dimensions',
      'contributions',
      'components',
      'health',
      'weights',
      'methodology',
      'version',
      'computedAt',
    ]);
    expect(doc.score.weights).to.deep.equal({ transparency: 0.25, reliability: 0.3, reputation: 0.35, ecosystem: 0.1 });
    expect(doc.score.version).to.equal('v1');
    const names = Object.values(doc.score.components).flatMap((c) => Object.keys(c));
    expect(names).to.have.length(22);
    expect(Object.keys(doc.inputs)).to.have.members([
      'daysSinceLastSettle',
      'daysSinceLastPublish',
      'revenueUsdc90d',
      'uniqueBuyers90d',
      'repeatBuyers90d',
      'settlementCount90d',
      'paidPostsCount30d',
      'postsPublished30d',
      'incomingSimilarCount',
      'publishedSkillCount',
      'paywalledSkillCount',
    ]);
    expect(doc.computedAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('keeps every invariant for a new, a middling and a thriving agent', () => {
    assertInvariants(scoreDocument(facts(), EMPTY_POPULATION, NOW, CTX));
    assertInvariants(
      scoreDocument(
        facts({ lastPublishAt: daysAgo(5), publishedSkillCount: 1, profile: { bio: 'x'.repeat(40) } }),
        POP,
        NOW,
        CTX,
      ),
    );
    assertInvariants(scoreDocument(thriving(), POP, NOW, CTX));
  });

  it('publishes points to hundredths and fractions to millionths for any agent, invariants exact', () => {
    const count = fc.integer({ min: 0, max: 500 });
    fc.assert(
      fc.property(
        fc.record({
          lastPublishAt: fc.option(
            fc.integer({ min: 0, max: 200_000 }).map((m) => daysAgo(m / 997)),
            { nil: null },
          ),
          lastSettleAt: fc.option(
            fc.integer({ min: 0, max: 200_000 }).map((m) => daysAgo(m / 991)),
            { nil: null },
          ),
          revenueAtomic90d: fc.bigInt({ min: 0n, max: 10n ** 12n }),
          uniqueBuyers90d: count,
          repeatBuyers90d: count,
          agentBuyers90d: count,
          settlementCount90d: count,
          publishedSkillCount: count,
          paywalledSkillCount: count,
        }),
        (f) => assertInvariants(scoreDocument(facts(f), POP, NOW, CTX)),
      ),
      { numRuns: 300 },
    );
  });

  it('rounds the decimal value half away from zero', () => {
    expect(roundTo(1.005, 2)).to.equal(1.01);
    expect(roundTo(-1.005, 2)).to.equal(-1.01);
    expect(roundTo(23.488300749999997, 2)).to.equal(23.49);
    expect(roundTo(5.5e-7, 6)).to.equal(0.000001);
    expect(roundTo(4.9e-7, 6)).to.equal(0);
    expect(roundTo(2 ** 60, 2)).to.equal(2 ** 60);
  });

  it('scores a new agent 0 (dormant, multiplier 0) with null day counts', () => {
    const { score, inputs } = scoreOf(facts(), EMPTY_POPULATION, NOW, 'm');
    expect(score.health).to.deep.equal({ status: 'dormant', multiplier: 0 });
    expect(score.score).to.equal(0);
    expect(inputs.daysSinceLastSettle).to.equal(null);
    expect(inputs.daysSinceLastPublish).to.equal(null);
  });

  it('golden: the thriving agent', () => {
    const { score, inputs } = scoreOf(thriving(), POP, NOW, 'm');
    expect(score.health).to.deep.equal({ status: 'healthy', multiplier: 1 });
    expect(score.components.transparency).to.deep.equal({
      declaredEndpoints: 1,
      oasfTaxonomyCoverage: 1,
      profileCompleteness: 1,
      installManifestPresent: 1,
      docsUrlPresent: 1,
      contactMethodPresent: 1,
      specConformantRegistration: 1,
    });
    expect(score.components.reputation.repeatBuyerWilson).to.equal(Number(wilsonLower(12, 40).toFixed(6)));
    expect(score.components.reputation.uniqueBuyerQuantile).to.equal(0.8125); // 6 below 40, one equal: (6 + 0.5) / 8
    expect(score.components.reputation.signalRatio).to.equal(0.75);
    expect(inputs.revenueUsdc90d).to.equal(125.5);
    expect(inputs.daysSinceLastSettle).to.equal(1);
    expect(score.score).to.be.greaterThan(80).and.lessThan(100);
  });

  it('a degraded agent keeps 85% of its raw score', () => {
    const { score } = scoreOf(
      facts({ lastPublishAt: daysAgo(10), publishedSkillCount: 1, paywalledSkillCount: 1 }),
      POP,
      NOW,
      'm',
    );
    expect(score.health.status).to.equal('degraded');
    expect(score.score).to.equal(roundTo(score.rawScore * 0.85, 2));
  });

  it('Wilson lower bound, percentiles and freshness behave at their edges', () => {
    expect(wilsonLower(0, 0)).to.equal(0);
    expect(wilsonLower(10, 10)).to.be.lessThan(1).and.greaterThan(0.69);
    expect(wilsonLower(1, 2)).to.be.lessThan(wilsonLower(50, 100));
    expect(percentile(0, [1, 2])).to.equal(0);
    expect(percentile(5, [])).to.equal(0);
    expect(percentile(1000, [1, 2, 3])).to.equal(1);
    expect(freshness(null)).to.equal(0);
    expect(freshness(0)).to.equal(1);
    expect(freshness(14)).to.be.closeTo(0.5, EPS);
  });
});
