import { expect } from 'chai';
import { kthLargest } from '../../src/domain/agents/kth-largest.js';
import {
  followingOrder,
  MAX_CANDIDATES,
  postingsByFeature,
  SeedCandidates,
} from '../../src/domain/agents/seed-candidates.js';
import { SignatureBuilder, SignatureIndex, type SignatureRow } from '../../src/domain/agents/signature-index.js';

/**
 * Five agents, a to e (ids in that order), and five features. N = 5 agents have features, and a
 * feature held by df of them weighs idf = ln(1 + N / df), as the signatures are written:
 *
 *   feature          held by         df  1 + 5/df  idf
 *   tag:ocr          c                1  6         ln 6   = 1.791759
 *   skill:invoice    b, d             2  7/2       ln 3.5 = 1.252763
 *   tag:tax          a, e             2  7/2       ln 3.5 = 1.252763
 *   tag:pdf          b, c, d          3  8/3       ln 8/3 = 0.980829
 *   domain:finance   a, b, c, d, e    5  2         ln 2   = 0.693147
 *
 *   a = e = {tax, finance}            Σ idf = ln(7/2 · 2)       = ln 7    = 1.945910
 *   b = d = {invoice, pdf, finance}   Σ idf = ln(7/2 · 8/3 · 2) = ln 56/3 = 2.926739
 *   c     = {ocr, pdf, finance}       Σ idf = ln(6 · 8/3 · 2)   = ln 32   = 3.465736
 *
 * A feature weighs the same in every signature holding it, so Σ min over shared features is the
 * shared features' Σ idf, and the IDF-weighted Jaccard similarity is
 * ln(∏ shared) / (Σ mine + Σ theirs − ln(∏ shared)), a ratio of logarithms of products:
 *
 *   c–b = c–d: shared {pdf, finance} = ln 16/3 = 1.673976; union = ln 32 + ln 56/3 − ln 16/3
 *              = ln 112 = 4.718499; similarity = 1.673976 / 4.718499 = 0.354769
 *   c–a = c–e: shared {finance} = ln 2; union = ln 32 + ln 7 − ln 2 = ln 112;
 *              similarity = 0.693147 / 4.718499 = 0.146900
 *   a–e:       identical signatures: ln 7 / ln 7 = 1
 *   a–b = a–d: shared {finance} = ln 2; union = ln 7 + ln 56/3 − ln 2 = ln 196/3 = 4.179502;
 *              similarity = 0.693147 / 4.179502 = 0.165844
 *   a–c:       = c–a = 0.146900
 *
 * Ties go to the agents that follow the ranking agent in id order, wrapping around: from c the
 * order of the others is d, e, a, b; from a it is b, c, d, e. So b and d tie for c and d comes
 * first, while for a, b comes first: no agent wins every tie.
 */
const N = 5;
const idf = (df: number) => Math.log(1 + N / df);
const W = { ocr: idf(1), invoice: idf(2), tax: idf(2), pdf: idf(3), finance: idf(5) };
const sig = (agentId: string, features: Array<[string, number]>): SignatureRow => ({
  agentId,
  features: features.map(([f]) => f),
  weights: features.map(([, w]) => w),
});
const SIGNATURES: SignatureRow[] = [
  sig('agent-a', [
    ['tag:tax', W.tax],
    ['domain:finance', W.finance],
  ]),
  sig('agent-b', [
    ['skill:invoice', W.invoice],
    ['tag:pdf', W.pdf],
    ['domain:finance', W.finance],
  ]),
  sig('agent-c', [
    ['tag:ocr', W.ocr],
    ['tag:pdf', W.pdf],
    ['domain:finance', W.finance],
  ]),
  sig('agent-d', [
    ['skill:invoice', W.invoice],
    ['tag:pdf', W.pdf],
    ['domain:finance', W.finance],
  ]),
  sig('agent-e', [
    ['tag:tax', W.tax],
    ['domain:finance', W.finance],
  ]),
];
const CB = Math.log(16 / 3) / Math.log(112);
const CA = Math.log(2) / Math.log(112);
const AB = Math.log(2) / Math.log(196 / 3);
/** Different summation orders of the same logarithms differ in the last bits at most. */
const EPS = 1e-12;

const expectRanking = (ranked: ReturnType<SignatureIndex['rank']>, expected: Array<[string, number, string[]]>) => {
  expect(ranked.map((r) => r.agentId)).to.deep.equal(expected.map(([id]) => id));
  ranked.forEach((r, i) => {
    const [id, similarity, shared] = expected[i]!;
    expect(r.similarity, id).to.be.closeTo(similarity, EPS);
    expect(r.shared, id).to.deep.equal(shared);
  });
};

describe('similar agents: the signature index ranks by IDF-weighted Jaccard', () => {
  it('the hand-computed numbers are what the weights give', () => {
    expect(CB).to.be.closeTo(0.354769, 1e-6);
    expect(CA).to.be.closeTo(0.1469, 1e-6);
    expect(AB).to.be.closeTo(0.165844, 1e-6);
  });

  it("ranks c's similar agents best first; of two equally similar, the one following c in id order comes first", () => {
    const index = SignatureIndex.of(SIGNATURES);
    const ranked = index.rank('agent-c', 10);
    // Shared features are named c's most telling first: pdf (ln 8/3) before finance (ln 2).
    expectRanking(ranked, [
      ['agent-d', CB, ['tag:pdf', 'domain:finance']],
      ['agent-b', CB, ['tag:pdf', 'domain:finance']],
      ['agent-e', CA, ['domain:finance']],
      ['agent-a', CA, ['domain:finance']],
    ]);
    // A tie is exact: the same weights summed in the same order.
    expect(ranked[0]!.similarity).to.equal(ranked[1]!.similarity);
    expect(ranked[2]!.similarity).to.equal(ranked[3]!.similarity);
  });

  it("ranks a's similar agents: its twin first at 1, and the tie between b and d goes to b, which follows a", () => {
    const ranked = SignatureIndex.of(SIGNATURES).rank('agent-a', 10);
    expectRanking(ranked, [
      ['agent-e', 1, ['tag:tax', 'domain:finance']],
      ['agent-b', AB, ['domain:finance']],
      ['agent-d', AB, ['domain:finance']],
      ['agent-c', CA, ['domain:finance']],
    ]);
    expect(ranked[0]!.similarity).to.equal(1);
    expect(ranked[1]!.similarity).to.equal(ranked[2]!.similarity);
  });

  it('a shorter list cuts inside a tie where the full list would: the agent following keeps its place', () => {
    const index = SignatureIndex.of(SIGNATURES);
    expect(index.rank('agent-c', 3).map((r) => r.agentId)).to.deep.equal(['agent-d', 'agent-b', 'agent-e']);
    expect(index.rank('agent-c', 1).map((r) => r.agentId)).to.deep.equal(['agent-d']);
    expect(index.rank('agent-e', 2).map((r) => r.agentId)).to.deep.equal(['agent-a', 'agent-b']);
  });

  it('gives the same ranking whatever order the features of a signature are read in', () => {
    const shuffled = SIGNATURES.map((s) => ({
      agentId: s.agentId,
      features: [...s.features].reverse(),
      weights: [...s.weights].reverse(),
    }));
    const index = SignatureIndex.of(shuffled);
    for (const s of SIGNATURES)
      expect(index.rank(s.agentId, 10), s.agentId).to.deep.equal(SignatureIndex.of(SIGNATURES).rank(s.agentId, 10));
    // Its seed features are its rarest first.
    expect(index.seedsOf('agent-c')).to.deep.equal(['tag:ocr', 'tag:pdf', 'domain:finance']);
  });

  it('a subset holding the agent, its seed windows and its candidates ranks exactly as the whole index', () => {
    const whole = SignatureIndex.of(SIGNATURES);
    // What loadSignatureSubset reads for c: its signature, the postings of its seed features, then its candidates' signatures.
    const postings = SIGNATURES.flatMap((s) =>
      s.features.map((feature, i) => ({ feature, agentId: s.agentId, weight: s.weights[i]! })),
    ).filter((p) => whole.seedsOf('agent-c').includes(p.feature));
    const candidates = SignatureIndex.of([SIGNATURES[2]!], postings).candidatesOf('agent-c');
    expect([...candidates].sort()).to.deep.equal(['agent-a', 'agent-b', 'agent-d', 'agent-e']);
    const subset = SignatureIndex.of(
      SIGNATURES.filter((s) => s.agentId === 'agent-c' || candidates.includes(s.agentId)),
      postings,
    );
    expect(subset.rank('agent-c', 10)).to.deep.equal(whole.rank('agent-c', 10));
  });

  it('an agent sharing no feature is not similar, and one without a signature has no similar agents', () => {
    const builder = new SignatureBuilder();
    for (const s of SIGNATURES) builder.add(s.agentId, s.features, s.weights);
    builder.add('agent-f', ['tag:poetry'], [idf(1)]);
    builder.add('agent-g');
    const index = builder.build();
    expect(index.rank('agent-f', 10)).to.deep.equal([]);
    expect(index.rank('agent-g', 10)).to.deep.equal([]);
    expect(index.rank('agent-c', 10).map((r) => r.agentId)).to.not.include('agent-f');
    expect(index.rank('nobody', 10)).to.deep.equal([]);
  });
});

describe('similar agents: the pieces of the index', () => {
  it('kthLargest finds the k-th largest value, duplicates counted, for every k', () => {
    const values = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
    const sorted = [...values].sort((a, b) => b - a);
    for (let k = 1; k <= values.length; k++)
      expect(kthLargest(Float64Array.from(values), k), `k = ${k}`).to.equal(sorted[k - 1]);
    let seed = 7;
    const random = Float64Array.from({ length: 1000 }, () => {
      seed = (seed * 48271) % 2147483647;
      return seed % 50;
    });
    const expected = [...random].sort((a, b) => b - a);
    for (const k of [1, 2, 300, 999, 1000]) expect(kthLargest(random.slice(), k)).to.equal(expected[k - 1]);
  });

  it('kthLargest refuses a k outside the array', () => {
    expect(() => kthLargest(Float64Array.of(1, 2), 0)).to.throw(RangeError);
    expect(() => kthLargest(Float64Array.of(1, 2), 3)).to.throw(RangeError);
  });

  it('postings group the entries by feature and keep their order within a feature', () => {
    const postings = postingsByFeature(3, {
      feature: Int32Array.of(2, 0, 2, 1, 0),
      agent: Int32Array.of(0, 1, 1, 2, 3),
      weight: Float64Array.of(0.5, 1, 0.5, 2, 1),
    });
    expect([...postings.start]).to.deep.equal([0, 2, 3, 5]);
    expect([...postings.agent]).to.deep.equal([1, 3, 2, 0, 1]);
    expect([...postings.weight]).to.deep.equal([1, 1, 2, 0.5, 0.5]);
    expect(() =>
      postingsByFeature(1, { feature: Int32Array.of(1), agent: Int32Array.of(0), weight: Float64Array.of(1) }),
    ).to.throw(RangeError);
  });

  it('the agents following one come in id order, wrapping around, the agent itself last', () => {
    const position = followingOrder(2, 5);
    expect([0, 1, 2, 3, 4].sort((a, b) => position(a) - position(b))).to.deep.equal([3, 4, 0, 1, 2]);
  });

  /** `n` agents holding feature 0 (weight 1); the agents in `rare` also hold feature 1 (weight 2). */
  const sharedFeature = (n: number, rare: number[] = []) => {
    const rows: Array<[number, number, number]> = [];
    for (let a = 0; a < n; a++) rows.push([0, a, 1]);
    for (const a of rare) rows.push([1, a, 2]);
    rows.sort((x, y) => x[1] - y[1]);
    return postingsByFeature(2, {
      feature: Int32Array.from(rows, (r) => r[0]),
      agent: Int32Array.from(rows, (r) => r[1]),
      weight: Float64Array.from(rows, (r) => r[2]),
    });
  };

  it("a seed feature's window is the agents following this one, wrapping around, as many as the cap", () => {
    const candidates = new SeedCandidates(sharedFeature(6), 6, 2);
    const seeds = Int32Array.of(0);
    expect(candidates.of(4, seeds, 0, 1)).to.have.members([5, 0]);
    expect(candidates.of(5, seeds, 0, 1)).to.have.members([0, 1]);
    expect(candidates.of(1, seeds, 0, 1)).to.have.members([2, 3]);
    // Scratch space is cleared between agents: the same call gives the same answer.
    expect(candidates.of(4, seeds, 0, 1)).to.have.members([5, 0]);
  });

  it('of more agents than it keeps, it keeps those sharing most seed weight, then those following this one', () => {
    const n = 400;
    const me = 350;
    const following = Array.from({ length: n - 1 }, (_, i) => (me + 1 + i) % n);
    // All tie: the 300 that follow.
    const tied = new SeedCandidates(sharedFeature(n), n);
    expect(tied.of(me, Int32Array.of(0), 0, 1)).to.have.members(following.slice(0, MAX_CANDIDATES));
    // Two share a rarer feature too: they come first whatever their place.
    const rare = [10, 340];
    const weighted = new SeedCandidates(sharedFeature(n, [...rare, me]), n);
    const expected = [...rare, ...following.filter((a) => !rare.includes(a)).slice(0, MAX_CANDIDATES - 2)];
    expect(weighted.of(me, Int32Array.of(1, 0), 0, 2)).to.have.members(expected);
  });
});

describe('similar agents: what the index refuses', () => {
  it('signatures out of id order, or with a weight missing, are refused when added', () => {
    const builder = new SignatureBuilder();
    builder.add('agent-b', ['tag:pdf'], [1]);
    expect(() => builder.add('agent-a', ['tag:pdf'], [1])).to.throw(/ascending agent id order/);
    expect(() => builder.add('agent-c', ['tag:pdf', 'tag:ocr'], [1])).to.throw(/2 features but 1 weights/);
  });

  it('postings naming an agent the index does not hold are refused', () => {
    const builder = new SignatureBuilder();
    builder.add('agent-a', ['tag:pdf'], [1]);
    expect(() => builder.build([{ feature: 'tag:pdf', agentId: 'agent-z', weight: 1 }])).to.throw(/agent-z/);
  });
});
