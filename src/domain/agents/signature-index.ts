import { createHash, type Hash } from 'node:crypto';
import {
  followingOrder,
  postingsByFeature,
  SEED_FEATURES,
  SEED_POSTINGS_CAP,
  SeedCandidates,
  type SignatureEntries,
} from './seed-candidates.js';

/** Separators of the digest's input: unit (between entries) and record (between a feature and its weight). */
const US = '\u001f';
const RS = '\u001e';

/** Shared features named per similar agent. */
const SHARED_NAMED = 10;

/** One agent's signature as read: its features and their idf weights, in any order. */
export type SignatureRow = { agentId: string; features: string[]; weights: number[] };
/** One entry of a feature's postings: an agent that has the feature, and its weight there. */
export type PostingRow = { feature: string; agentId: string; weight: number };
/** A similar agent as ranked: its id, IDF-weighted Jaccard similarity and shared features (most telling first). */
export type Ranked = { agentId: string; similarity: number; shared: string[] };

/**
 * Appends signatures in ascending agent id order into flat arrays, interning feature names, so a
 * snapshot of millions of entries never exists as row objects.
 */
export class SignatureBuilder {
  /** Hashes every signature added, in a form that does not depend on the order it was read in (see `digest`). */
  private readonly hash: Hash | undefined;
  readonly ids: string[] = [];
  readonly features: string[] = [];
  private readonly featureOf = new Map<string, number>();
  readonly start: number[] = [0];
  readonly feature: number[] = [];
  readonly weight: number[] = [];

  /** @param opts.digest also hash the signatures, for the index's `digest` */
  constructor(opts: { digest?: boolean } = {}) {
    this.hash = opts.digest ? createHash('sha256') : undefined;
  }

  /** Adds the next agent (ids ascending) with its signature, or none. */
  add(agentId: string, features: string[] = [], weights: number[] = []) {
    const last = this.ids.at(-1);
    if (last !== undefined && !(agentId > last))
      throw new Error('signatures must be added in ascending agent id order');
    if (features.length !== weights.length)
      throw new Error(`agent ${agentId}: ${features.length} features but ${weights.length} weights`);
    this.ids.push(agentId);
    // Heaviest first, then by name: the seed features and the order of `shared`. The lengths are
    // equal (checked above), so every index read here is present and `??` never applies.
    const order = features
      .map((_, i) => i)
      .sort((i, j) => {
        const heavier = (weights[j] ?? 0) - (weights[i] ?? 0);
        if (heavier !== 0) return heavier;
        const a = features[i] ?? '';
        const b = features[j] ?? '';
        return a < b ? -1 : a > b ? 1 : 0;
      });
    for (const i of order) {
      this.feature.push(this.intern(features[i] ?? ''));
      this.weight.push(weights[i] ?? 0);
    }
    this.start.push(this.feature.length);
    // Agents ascending, each one's entries in the order just sorted: the same signatures give the
    // same bytes whatever order PostgreSQL aggregated them in.
    this.hash?.update(`${agentId}${US}${order.map((i) => `${features[i]}${RS}${weights[i]}`).join(US)}\n`);
  }

  /** The digest of the signatures added (hex SHA-256), when the builder was asked to hash them; call once, after the last `add`. */
  digest(): string | undefined {
    return this.hash?.digest('hex');
  }

  /** The number of feature `name`, numbering it if it is new. */
  intern(name: string) {
    let f = this.featureOf.get(name);
    if (f === undefined) {
      f = this.features.length;
      this.features.push(name);
      this.featureOf.set(name, f);
    }
    return f;
  }

  /**
   * The index. Postings are every signature's entries unless `postings` are given (a subset's
   * windows), whose agents must all have been added.
   */
  build(postings?: PostingRow[], windowCap = SEED_POSTINGS_CAP): SignatureIndex {
    return new SignatureIndex(this, postings, windowCap);
  }
}

/** Two ranked agents compared: `a` its number, `sim` its similarity. */
type Scored = { a: number; sim: number };

/**
 * Signatures held in compact arrays: each agent's signature, rarest feature first, and each
 * feature's postings (its agents in id order), from which candidates are sampled. Agents are
 * numbered in id order (PostgreSQL's uuid order is the order of the lower-case text), so "the
 * agents after this one" is a comparison of numbers.
 *
 * The full recompute scores every agent against one snapshot of all signatures; a single agent's
 * recompute builds the same structure from the few rows its ranking reads (see
 * signature-loaders.ts). Both rank with the same code, and a subset holding each seed feature's
 * window of 2,000 agents ranks exactly as the snapshot does.
 *
 * Array reads below use indexes that lie within the arrays by construction (agent numbers below
 * `size`, feature numbers below the feature count, positions taken from `sigStart`), so their
 * `?? 0` never applies; it stands where a checked read would cost the hot loops a branch and an
 * exception path for a case that cannot occur.
 */
export class SignatureIndex {
  private readonly ids: string[];
  private readonly numberOf = new Map<string, number>();
  private readonly features: string[];
  /** Agent a's signature is sigFeature/sigWeight[sigStart[a], sigStart[a + 1]), heaviest (rarest) first; empty when not loaded. */
  private readonly sigStart: Int32Array;
  private readonly sigFeature: Int32Array;
  private readonly sigWeight: Float64Array;
  private readonly sigTotal: Float64Array;
  /** Each feature's agents (ascending) and weights, from which candidates are sampled. */
  private readonly seedCandidates: SeedCandidates;
  /** Scratch space for ranking (one agent at a time; ranking is synchronous): this agent's weight of each feature. */
  private readonly mine: Float64Array;
  /**
   * SHA-256 of every signature held, when built to carry one (a snapshot): two snapshots with the
   * same digest rank every agent alike.
   */
  readonly digest: string | undefined;

  /** An index of a few rows (a subset): signatures and, optionally, the postings to sample from. */
  static of(signatures: SignatureRow[], postings?: PostingRow[]): SignatureIndex {
    const byId = new Map(signatures.map((s) => [s.agentId, s]));
    const ids = new Set([...byId.keys(), ...(postings ?? []).map((p) => p.agentId)]);
    const builder = new SignatureBuilder();
    for (const id of [...ids].sort()) builder.add(id, byId.get(id)?.features, byId.get(id)?.weights);
    return builder.build(postings);
  }

  /** @param windowCap agents read per seed feature (SEED_POSTINGS_CAP; other values only to measure what the cap costs) */
  constructor(built: SignatureBuilder, postings?: PostingRow[], windowCap = SEED_POSTINGS_CAP) {
    this.ids = built.ids;
    this.digest = built.digest();
    for (const [a, id] of this.ids.entries()) this.numberOf.set(id, a);
    const n = this.ids.length;
    this.sigStart = Int32Array.from(built.start);
    this.sigFeature = Int32Array.from(built.feature);
    this.sigWeight = Float64Array.from(built.weight);
    this.sigTotal = new Float64Array(n);
    for (let a = 0; a < n; a++) {
      let total = 0;
      for (let i = this.sigStart[a] ?? 0, end = this.sigStart[a + 1] ?? 0; i < end; i++)
        total += this.sigWeight[i] ?? 0;
      this.sigTotal[a] = total;
    }
    // Interns the postings' features before the features are counted.
    const entries = postings ? this.entriesOf(built, postings) : this.ownEntries();
    this.features = built.features;
    const m = this.features.length;
    this.seedCandidates = new SeedCandidates(postingsByFeature(m, entries), n, windowCap);
    this.mine = new Float64Array(m);
  }

  /** Every signature's entries, agents ascending: the postings of a snapshot. */
  private ownEntries(): SignatureEntries {
    const agent = new Int32Array(this.sigFeature.length);
    for (let a = 0; a < this.ids.length; a++) agent.fill(a, this.sigStart[a] ?? 0, this.sigStart[a + 1] ?? 0);
    return { feature: this.sigFeature, agent, weight: this.sigWeight };
  }

  /** The given postings as entries, agents ascending, each (feature, agent) once (windows of several agents overlap). */
  private entriesOf(built: SignatureBuilder, postings: PostingRow[]): SignatureEntries {
    const n = this.ids.length;
    const seen = new Set<number>();
    const rows: Array<[number, number, number]> = [];
    for (const p of postings) {
      const f = built.intern(p.feature);
      const a = this.numberOf.get(p.agentId);
      if (a === undefined) throw new Error(`posting of ${p.feature} names agent ${p.agentId}, which was not added`);
      const key = f * n + a;
      if (seen.has(key)) continue;
      seen.add(key);
      rows.push([f, a, p.weight]);
    }
    rows.sort((x, y) => x[1] - y[1]);
    return {
      feature: Int32Array.from(rows, (r) => r[0]),
      agent: Int32Array.from(rows, (r) => r[1]),
      weight: Float64Array.from(rows, (r) => r[2]),
    };
  }

  get size() {
    return this.ids.length;
  }

  /** Whether the agent's signature here is exactly `row` (same features, same weights). */
  sameSignature(row: SignatureRow): boolean {
    const a = this.numberOf.get(row.agentId);
    if (a === undefined) return false;
    const from = this.sigStart[a] ?? 0;
    const to = this.sigStart[a + 1] ?? 0;
    if (to - from !== row.features.length) return false;
    const held = new Map<string, number>();
    for (let i = from; i < to; i++) held.set(this.nameOf(this.sigFeature[i] ?? 0), this.sigWeight[i] ?? 0);
    return row.features.every((f, i) => held.get(f) === row.weights[i]);
  }

  /** The agent's seed features: its 8 heaviest (rarest). */
  seedsOf(agentId: string): string[] {
    const a = this.numberOf.get(agentId);
    if (a === undefined) return [];
    const from = this.sigStart[a] ?? 0;
    const to = Math.min(this.sigStart[a + 1] ?? 0, from + SEED_FEATURES);
    return Array.from(this.sigFeature.subarray(from, to), (f) => this.nameOf(f));
  }

  private idOf(agent: number): string {
    const id = this.ids[agent];
    if (id === undefined) throw new Error(`agent ${agent} is not in the index`);
    return id;
  }

  private nameOf(feature: number): string {
    const name = this.features[feature];
    if (name === undefined) throw new Error(`feature ${feature} is not in the index`);
    return name;
  }

  /**
   * The candidates of an agent: the 300 agents of its seed windows with the most seed weight in
   * common (ties to the agents following it). Empty when its signature is not held.
   */
  candidatesOf(agentId: string): string[] {
    return this.candidates(this.numberOf.get(agentId)).map((a) => this.idOf(a));
  }

  private candidates(me: number | undefined): number[] {
    if (me === undefined) return [];
    const from = this.sigStart[me] ?? 0;
    const to = Math.min(this.sigStart[me + 1] ?? 0, from + SEED_FEATURES);
    return this.seedCandidates.of(me, this.sigFeature, from, to);
  }

  /**
   * The `limit` agents most similar to `agentId` by IDF-weighted Jaccard over signatures
   * (Σ min weight over shared features / Σ weight over the union), best first, ties to the agents
   * following it in id order, each with the features it shares (this agent's most telling first,
   * at most 10). Needs the signatures of the agent and of its candidates.
   */
  rank(agentId: string, limit: number): Ranked[] {
    const me = this.numberOf.get(agentId);
    if (me === undefined || limit <= 0) return [];
    const { mine, sigStart, sigFeature, sigWeight, sigTotal } = this;
    const from = sigStart[me] ?? 0;
    const to = sigStart[me + 1] ?? 0;
    const myTotal = sigTotal[me] ?? 0;
    for (let i = from; i < to; i++) mine[sigFeature[i] ?? 0] = sigWeight[i] ?? 0;
    const after = followingOrder(me, this.ids.length);
    const before = (x: Scored, y: Scored) => x.sim > y.sim || (x.sim === y.sim && after(x.a) < after(y.a));
    const best: Scored[] = [];
    for (const c of this.candidates(me)) {
      let inter = 0;
      for (let i = sigStart[c] ?? 0, end = sigStart[c + 1] ?? 0; i < end; i++) {
        const w = mine[sigFeature[i] ?? 0] ?? 0;
        if (w > 0) inter += Math.min(w, sigWeight[i] ?? 0);
      }
      if (inter <= 0) continue;
      const sim = inter / (myTotal + (sigTotal[c] ?? 0) - inter);
      const worst = best.length === limit ? best[limit - 1] : undefined;
      if (worst && (sim < worst.sim || (sim === worst.sim && after(c) > after(worst.a)))) continue;
      // Insertion into the sorted list, the last entry dropped when it is full.
      const entry = { a: c, sim };
      let k = worst ? limit - 1 : best.length;
      while (k > 0) {
        const prev = best[k - 1];
        if (prev === undefined || !before(entry, prev)) break;
        best[k] = prev;
        k--;
      }
      best[k] = entry;
    }
    for (let i = from; i < to; i++) mine[sigFeature[i] ?? 0] = 0;
    return best.map(({ a, sim }) => {
      const theirs = new Set(sigFeature.subarray(sigStart[a] ?? 0, sigStart[a + 1] ?? 0));
      const shared: string[] = [];
      for (let i = from; i < to && shared.length < SHARED_NAMED; i++) {
        const f = sigFeature[i] ?? 0;
        if (theirs.has(f)) shared.push(this.nameOf(f));
      }
      return { agentId: this.idOf(a), similarity: sim, shared };
    });
  }
}
