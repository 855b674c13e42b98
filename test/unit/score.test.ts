import { expect } from 'chai';
import fc from 'fast-check';
import { scoreDocument, scoreOf, wilsonLower, percentile, freshness } from '../../src/domain/scoring/score.js';
import { COMPONENTS, DECIMALS, DIMENSION_WEIGHTS, roundTo } from '../../src/domain/scoring/methodology.js';
import { EMPTY_POPULATION, type Population } from '../../src/domain/scoring/facts.js';
import { agentScoreDocument } from '../../src/documents/agent/score.document.js';
import { jsonBytes } from '../../src/documents/document.js';
import { facts, thriving, daysAgo, NOW } from '../support/facts.js';
import { assertPublishedScoreInvariants, decimalOf } from '../support/score-invariants.js';

const POP: Population = {
  uniqueBuyers: [1, 2, 3, 5, 8, 13, 40, 100],
  settlements: [1, 1, 2, 5, 10, 80, 200],
  paidSkills: [1, 1, 2, 4, 9],
  incomingSimilar: [1, 2, 6, 10],
};
const CTX = { baseUrl: 'https://market.example', source: 'skill-market' };
const EPS = 1e-9;

/** The score document as a reader gets it: rendered by its catalogue entry, serialised, parsed back. */
const published = (doc: ReturnType<typeof scoreDocument>) => JSON.parse(jsonBytes(agentScoreDocument.render(doc)));

function assertInvariants(doc: ReturnType<typeof scoreDocument>) {
  const json = published(doc);
  assertPublishedScoreInvariants(json);
  const s = json.score;
  for (const d of Object.keys(DIMENSION_WEIGHTS) as Array<keyof typeof DIMENSION_WEIGHTS>) {
    for (const [name, spec] of Object.entries(COMPONENTS[d])) {
      const v = s.components[d][name]!;
      if (spec.binary) expect([0, 1], `${d}.${name} is binary`).to.include(v);
    }
  }
  // What a reader sees: short decimals, each at most what the methodology states.
  const atMost = (values: number[], decimals: number) => {
    for (const v of values) expect(decimalOf(v).scale, String(v)).to.be.at.most(decimals);
  };
  atMost(Object.values(s.dimensions), DECIMALS.dimensions);
  atMost(Object.values(s.contributions), DECIMALS.contributions);
  atMost([s.rawScore], DECIMALS.rawScore);
  atMost([s.score], DECIMALS.score);
  atMost(
    Object.values(s.components).flatMap((c) => Object.values(c as Record<string, number>)),
    DECIMALS.fractions,
  );
}

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

  it('publishes, for any agent, a score document whose own figures keep every seed invariant exactly', () => {
    const count = fc.integer({ min: 0, max: 500 });
    const url = fc.option(fc.constant('https://x.example'), { nil: null });
    const population = fc
      .array(fc.integer({ min: 1, max: 300 }), { maxLength: 30 })
      .map((a) => a.sort((x, y) => x - y));
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
          publishedWithOasf: count,
          publishedWithInstall: count,
          topLevelCategories: fc.integer({ min: 0, max: 6 }),
          incomingSimilarCount: count,
          tokenId: fc.option(fc.constant('7'), { nil: null }),
          identity: fc.option(
            fc.record({
              tokenId: fc.constant('7'),
              ownerMatches: fc.boolean(),
              payoutMatches: fc.boolean(),
              registrationValid: fc.boolean(),
              registrationConformant: fc.boolean(),
            }),
            { nil: null },
          ),
          profile: fc.record({
            displayName: fc.option(fc.constant('Alice'), { nil: null }),
            bio: fc.option(fc.string({ maxLength: 60 }), { nil: null }),
            avatarUrl: url,
            websiteUrl: url,
            contactEmail: fc.option(fc.constant('ops@x.example'), { nil: null }),
            docsUrl: url,
            capabilities: fc.record({ mcp: fc.constant('https://m.example') }, { requiredKeys: [] }),
            oasfSkills: fc.array(fc.constant('s'), { maxLength: 3 }),
            oasfDomains: fc.array(fc.constant('d'), { maxLength: 2 }),
            hasInstallManifest: fc.boolean(),
          }),
        }),
        fc.record({
          uniqueBuyers: population,
          settlements: population,
          paidSkills: population,
          incomingSimilar: population,
        }),
        (f, pop) => assertInvariants(scoreDocument(facts(f), pop, NOW, CTX)),
      ),
      { numRuns: 400 },
    );
  });

  it('a dimension of 0.066667 is published as 0.0667, its transparency contribution as exactly 1.6675', () => {
    // Three of the six profile basics and nothing else: transparency = 0.2 x 3/6 = 0.1; one of the
    // three endpoints alone: 0.2 x 1/3 = 0.0666...67, which the seed's equation used to break.
    const { score } = scoreOf(facts({ profile: { capabilities: { mcp: 'https://m.example' } } }), POP, NOW, 'm');
    expect(score.dimensions.transparency).to.equal(0.0667);
    expect(score.contributions.transparency).to.equal(1.6675);
    expect(JSON.stringify(score.contributions.transparency)).to.equal('1.6675');
  });

  it('rounds the decimal value half away from zero', () => {
    expect(roundTo(1.005, 2)).to.equal(1.01);
    expect(roundTo(-1.005, 2)).to.equal(-1.01);
    expect(roundTo(23.488300749999997, 2)).to.equal(23.49);
    expect(roundTo(5.5e-7, 6)).to.equal(0.000001);
    expect(roundTo(4.9e-7, 6)).to.equal(0);
    expect(roundTo(2 ** 60, 2)).to.equal(2 ** 60);
    expect(roundTo(1e13, 8)).to.equal(1e13);
    expect(roundTo(-123456789.123, 15)).to.equal(-123456789.123);
  });

  it('rounds as the decimal text does, for any double and places', () => {
    const nextDouble = (x: number, direction: 1 | -1) => {
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, x);
      const bits = view.getBigUint64(0);
      // Away from zero is one more in the bits' magnitude, for either sign.
      view.setBigUint64(0, x === 0 ? 1n : bits + (Math.sign(x) === direction ? 1n : -1n));
      return view.getFloat64(0);
    };
    // The rounding of the number's shortest decimal text, shifted in the text: what the fast path must equal.
    const byText = (x: number, decimals: number) => {
      const [mantissa, exponent = '0'] = String(Math.abs(x)).split('e');
      const shifted = Math.round(Number(`${mantissa}e${Number(exponent) + decimals}`));
      return Math.sign(x) * Number(`${shifted}e-${decimals}`) || 0;
    };
    const halves = fc
      .tuple(fc.integer({ min: -1e9, max: 1e9 }), fc.integer({ min: 0, max: 8 }))
      .map(([n, d]) => [(n + 0.5) / 10 ** d, d] as const);
    // The doubles either side of a half, where binary scaling could round the other way.
    const nearHalves = halves.chain(([x, d]) =>
      fc.constantFrom([nextDouble(x, 1), d] as const, [nextDouble(x, -1), d] as const),
    );
    const any = fc.tuple(
      fc.double({ min: -1e12, max: 1e12, noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: 0, max: 8 }),
    );
    fc.assert(
      fc.property(fc.oneof(halves, nearHalves, any), ([x, decimals]) => {
        expect(Object.is(roundTo(x, decimals), byText(x, decimals)), `${x} to ${decimals}`).to.equal(true);
      }),
      { numRuns: 20_000 },
    );
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
    const raw = decimalOf(score.rawScore);
    // The number nearest the exact decimal rawScore x 0.85, which is what the document prints.
    expect(score.score).to.equal(Number(raw.units * 85n) / 10 ** (raw.scale + 2));
    expect(score.score).to.not.equal(roundTo(score.score, 2), 'kept exact, not rounded to hundredths');
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
