import { sql } from 'kysely';
import type { Db } from '../../data/db.js';

/** Candidates come from agents sharing one of the 8 rarest signature features. */
export const SEED_FEATURES = 8;
/** The candidates kept: the agents sharing most seed weight. */
export const MAX_CANDIDATES = 300;
/**
 * Agents read per seed feature when choosing candidates: a feature more common than this
 * contributes the 2,000 agents that follow this agent in id order (wrapping around; ids are
 * random, so a uniform sample that differs per agent and favours no one), not all its agents. At
 * 100k agents a seed feature had ~1,000 agents on average and some far more; on a sample of 100
 * agents, capping at 2,000 kept 82% of the top-10 entries (mean top-10 similarity 0.128 against
 * 0.130).
 */
export const SEED_POSTINGS_CAP = 2000;

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
  readonly ids: string[] = [];
  readonly features: string[] = [];
  private readonly featureOf = new Map<string, number>();
  readonly start: number[] = [0];
  readonly feature: number[] = [];
  readonly weight: number[] = [];

  /** Adds the next agent (ids ascending) with its signature, or none. */
  add(agentId: string, features: string[] = [], weights: number[] = []) {
    if (this.ids.length && !(agentId > this.ids[this.ids.length - 1]!))
      throw new Error('signatures must be added in ascending agent id order');
    this.ids.push(agentId);
    // Heaviest first, then by name: the seed features and the order of `shared`.
    const order = features
      .map((_, i) => i)
      .sort(
        (i, j) => weights[j]! - weights[i]! || (features[i]! < features[j]! ? -1 : features[i]! > features[j]! ? 1 : 0),
      );
    for (const i of order) {
      this.feature.push(this.intern(features[i]!));
      this.weight.push(weights[i]!);
    }
    this.start.push(this.feature.length);
  }

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

/**
 * Signatures held in compact arrays: each agent's signature, rarest feature first, and each
 * feature's postings (its agents in id order), from which candidates are sampled. Agents are
 * numbered in id order (PostgreSQL's uuid order is the order of the lower-case text), so "the
 * agents after this one" is a comparison of numbers.
 *
 * The full recompute scores every agent against one snapshot of all signatures (`signatureSnapshot`);
 * a single agent's recompute builds the same structure from the few rows its ranking reads
 * (`loadSignatureSubset`). Both rank with the same code, and a subset holding each seed feature's
 * window of 2,000 agents ranks exactly as the snapshot does.
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
  /** Feature f's postings are postAgent/postWeight[postStart[f], postStart[f + 1]), agents ascending. */
  private readonly postStart: Int32Array;
  private readonly postAgent: Int32Array;
  private readonly postWeight: Float64Array;
  // Scratch space for ranking (one agent at a time; ranking is synchronous).
  private readonly acc: Float64Array;
  private readonly touched: Int32Array;
  private readonly values: Float64Array;
  private readonly mine: Float64Array;

  /** An index of a few rows (a subset): signatures and, optionally, the postings to sample from. */
  static of(signatures: SignatureRow[], postings?: PostingRow[]): SignatureIndex {
    const byId = new Map(signatures.map((s) => [s.agentId, s]));
    const ids = new Set([...byId.keys(), ...(postings ?? []).map((p) => p.agentId)]);
    const builder = new SignatureBuilder();
    for (const id of [...ids].sort()) builder.add(id, byId.get(id)?.features, byId.get(id)?.weights);
    return builder.build(postings);
  }

  /** @param windowCap agents read per seed feature (SEED_POSTINGS_CAP; other values only to measure what the cap costs) */
  constructor(
    built: SignatureBuilder,
    postings?: PostingRow[],
    private readonly windowCap = SEED_POSTINGS_CAP,
  ) {
    this.ids = built.ids;
    this.ids.forEach((id, i) => this.numberOf.set(id, i));
    const n = this.ids.length;
    this.sigStart = Int32Array.from(built.start);
    this.sigFeature = Int32Array.from(built.feature);
    this.sigWeight = Float64Array.from(built.weight);
    this.sigTotal = new Float64Array(n);
    for (let a = 0; a < n; a++) {
      let total = 0;
      for (let i = this.sigStart[a]!; i < this.sigStart[a + 1]!; i++) total += this.sigWeight[i]!;
      this.sigTotal[a] = total;
    }

    // Postings by counting sort over features, agents visited in ascending order.
    let entries: { feature: Int32Array; agent: Int32Array; weight: Float64Array };
    if (postings) {
      const seen = new Set<number>();
      const rows: Array<[number, number, number]> = [];
      for (const p of postings) {
        const f = built.intern(p.feature);
        const a = this.numberOf.get(p.agentId)!;
        const key = f * n + a;
        if (seen.has(key)) continue; // windows of several agents overlap
        seen.add(key);
        rows.push([f, a, p.weight]);
      }
      rows.sort((x, y) => x[1] - y[1]);
      entries = {
        feature: Int32Array.from(rows, (r) => r[0]),
        agent: Int32Array.from(rows, (r) => r[1]),
        weight: Float64Array.from(rows, (r) => r[2]),
      };
    } else {
      const agent = new Int32Array(this.sigFeature.length);
      for (let a = 0; a < n; a++) agent.fill(a, this.sigStart[a]!, this.sigStart[a + 1]!);
      entries = { feature: this.sigFeature, agent, weight: this.sigWeight };
    }
    this.features = built.features;
    const m = this.features.length;
    this.postStart = new Int32Array(m + 1);
    for (const f of entries.feature) this.postStart[f + 1]!++;
    for (let f = 0; f < m; f++) this.postStart[f + 1]! += this.postStart[f]!;
    const fill = this.postStart.slice(0, m);
    this.postAgent = new Int32Array(entries.feature.length);
    this.postWeight = new Float64Array(entries.feature.length);
    for (let i = 0; i < entries.feature.length; i++) {
      const at = fill[entries.feature[i]!]!++;
      this.postAgent[at] = entries.agent[i]!;
      this.postWeight[at] = entries.weight[i]!;
    }
    this.acc = new Float64Array(n);
    this.touched = new Int32Array(n);
    this.values = new Float64Array(n);
    this.mine = new Float64Array(m);
  }

  get size() {
    return this.ids.length;
  }

  /** Whether the agent's signature here is exactly `row` (same features, same weights). */
  sameSignature(row: SignatureRow): boolean {
    const a = this.numberOf.get(row.agentId);
    if (a === undefined) return false;
    const from = this.sigStart[a]!;
    const to = this.sigStart[a + 1]!;
    if (to - from !== row.features.length) return false;
    const held = new Map<string, number>();
    for (let i = from; i < to; i++) held.set(this.features[this.sigFeature[i]!]!, this.sigWeight[i]!);
    return row.features.every((f, i) => held.get(f) === row.weights[i]);
  }

  /** The agent's seed features: its 8 heaviest (rarest). */
  seedsOf(agentId: string): string[] {
    const a = this.numberOf.get(agentId);
    if (a === undefined) return [];
    const from = this.sigStart[a]!;
    const to = Math.min(this.sigStart[a + 1]!, from + SEED_FEATURES);
    return Array.from(this.sigFeature.subarray(from, to), (f) => this.features[f]!);
  }

  /** First position in postings [lo, hi) whose agent is `agent` or later. */
  private lowerBound(lo: number, hi: number, agent: number) {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.postAgent[mid]! < agent) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Position of each agent after `me` in id order, wrapping around: ties go to the agents that
   * follow `me`, so no agent wins every tie (a tie to the lowest id made the first few hundred
   * agents everybody's similar agent, and their incoming-similar score with it). Restricting the
   * agents keeps their cyclic order, so a subset breaks ties as the snapshot does.
   */
  private after(me: number) {
    const n = this.ids.length;
    return (a: number) => (a > me ? a - me : a - me + n);
  }

  /**
   * The candidates of agent `me`: the 300 agents of its seed windows with the most seed weight in
   * common (ties to the agents following it). Empty when its signature is not held.
   */
  candidatesOf(agentId: string): string[] {
    return this.candidates(this.numberOf.get(agentId)).map((a) => this.ids[a]!);
  }

  private candidates(me: number | undefined): number[] {
    if (me === undefined) return [];
    const { acc, touched, postStart, postAgent, postWeight } = this;
    let t = 0;
    const from = this.sigStart[me]!;
    const to = Math.min(this.sigStart[me + 1]!, from + SEED_FEATURES);
    for (let s = from; s < to; s++) {
      // The feature's window: up to 2,000 of its agents following me in id order, wrapping around
      // to the first ones, me excluded. Inlined: this loop is most of the ranking's time.
      const f = this.sigFeature[s]!;
      const start = postStart[f]!;
      const end = postStart[f + 1]!;
      const first = this.lowerBound(start, end, me + 1);
      const mine = this.lowerBound(start, end, me);
      let left = this.windowCap;
      for (let i = first; i < end && left > 0; i++, left--) {
        const a = postAgent[i]!;
        if (acc[a] === 0) touched[t++] = a; // weights are ln(1 + N/df) > 0
        acc[a]! += postWeight[i]!;
      }
      for (let i = start; i < mine && left > 0; i++, left--) {
        const a = postAgent[i]!;
        if (acc[a] === 0) touched[t++] = a;
        acc[a]! += postWeight[i]!;
      }
    }
    let chosen: number[] = [];
    if (t <= MAX_CANDIDATES) {
      for (let i = 0; i < t; i++) chosen.push(touched[i]!);
    } else {
      const values = this.values.subarray(0, t);
      for (let i = 0; i < t; i++) values[i] = acc[touched[i]!]!;
      const threshold = kthLargest(values, MAX_CANDIDATES);
      const ties: number[] = [];
      for (let i = 0; i < t; i++) {
        const a = touched[i]!;
        if (acc[a]! > threshold) chosen.push(a);
        else if (acc[a] === threshold) ties.push(a);
      }
      // Equal seed weight is common (agents with the same features): the ones following me win.
      const room = MAX_CANDIDATES - chosen.length;
      if (ties.length <= room) chosen = chosen.concat(ties);
      else {
        const after = this.after(me);
        const keys = Float64Array.from(ties, (a) => -after(a));
        const last = -kthLargest(keys, room);
        for (const a of ties) if (after(a) <= last) chosen.push(a);
      }
    }
    for (let i = 0; i < t; i++) acc[touched[i]!] = 0;
    return chosen;
  }

  /**
   * The `limit` agents most similar to `agentId` by IDF-weighted Jaccard over signatures
   * (Σ min weight over shared features / Σ weight over the union), best first, ties to the agents
   * following it in id order, each with the features it shares (this agent's most telling first, at most 10). Needs the
   * signatures of the agent and of its candidates.
   */
  rank(agentId: string, limit: number): Ranked[] {
    const me = this.numberOf.get(agentId);
    if (me === undefined) return [];
    const { mine, sigStart, sigFeature, sigWeight, sigTotal } = this;
    const from = sigStart[me]!;
    const to = sigStart[me + 1]!;
    for (let i = from; i < to; i++) mine[sigFeature[i]!] = sigWeight[i]!;
    const after = this.after(me);
    const before = (x: { a: number; sim: number }, y: { a: number; sim: number }) =>
      x.sim > y.sim || (x.sim === y.sim && after(x.a) < after(y.a));
    const best: Array<{ a: number; sim: number }> = [];
    for (const c of this.candidates(me)) {
      let inter = 0;
      for (let i = sigStart[c]!, end = sigStart[c + 1]!; i < end; i++) {
        const w = mine[sigFeature[i]!]!;
        if (w > 0) inter += w < sigWeight[i]! ? w : sigWeight[i]!;
      }
      if (inter <= 0) continue;
      const sim = inter / (sigTotal[me]! + sigTotal[c]! - inter);
      if (
        best.length === limit &&
        (sim < best[limit - 1]!.sim || (sim === best[limit - 1]!.sim && after(c) > after(best[limit - 1]!.a)))
      )
        continue;
      const entry = { a: c, sim };
      let k = best.length === limit ? limit - 1 : best.length;
      best[k] = entry;
      while (k > 0 && before(entry, best[k - 1]!)) {
        [best[k - 1], best[k]] = [best[k]!, best[k - 1]!];
        k--;
      }
    }
    for (let i = from; i < to; i++) mine[sigFeature[i]!] = 0;
    return best.map(({ a, sim }) => {
      const theirs = new Set(this.sigFeature.subarray(this.sigStart[a]!, this.sigStart[a + 1]!));
      const shared: string[] = [];
      for (let i = from; i < to && shared.length < 10; i++)
        if (theirs.has(this.sigFeature[i]!)) shared.push(this.features[this.sigFeature[i]!]!);
      return { agentId: this.ids[a]!, similarity: sim, shared };
    });
  }
}

/** The k-th largest value of `xs` (1-based), reordering `xs` (quickselect). */
function kthLargest(xs: Float64Array, k: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  const target = k - 1;
  while (lo < hi) {
    const pivot = xs[(lo + hi) >>> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (xs[i]! > pivot) i++;
      while (xs[j]! < pivot) j--;
      if (i <= j) {
        const t = xs[i]!;
        xs[i] = xs[j]!;
        xs[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else break;
  }
  return xs[target]!;
}

type SigQueryRow = { agent_id: string; features: string[]; weights: number[] };
const toSignature = (r: SigQueryRow): SignatureRow => ({
  agentId: r.agent_id,
  features: r.features,
  weights: r.weights.map(Number),
});

/** The current signatures of `ids` (agents without features have none). */
export async function readSignatures(db: Db, ids: string[]): Promise<SignatureRow[]> {
  if (!ids.length) return [];
  const { rows } = await sql<SigQueryRow>`
    SELECT agent_id, array_agg(feature) AS features, array_agg(weight) AS weights
    FROM agent_signature WHERE agent_id = ANY(${ids}::uuid[]) GROUP BY agent_id`.execute(db);
  return rows.map(toSignature);
}

/**
 * What ranking `agentIds` reads, and only that, in three statements: their signatures, each seed
 * feature's window of agents, and the candidates' signatures. The single-agent recompute (a
 * domain event, the API's fallback render) ranks through this.
 */
export async function loadSignatureSubset(db: Db, agentIds: string[]): Promise<SignatureIndex> {
  const own = await readSignatures(db, agentIds);
  const seeds = SignatureIndex.of(own);
  const pairs = own.flatMap((s) => seeds.seedsOf(s.agentId).map((feature) => ({ me: s.agentId, feature })));
  let windows: PostingRow[] = [];
  if (pairs.length) {
    const { rows } = await sql<{ feature: string; agent_id: string; weight: number }>`
      SELECT q.feature, p.agent_id, p.weight
      FROM unnest(${pairs.map((p) => p.me)}::uuid[], ${pairs.map((p) => p.feature)}::text[]) q(me, feature)
      CROSS JOIN LATERAL (
        SELECT * FROM (
          (SELECT s.agent_id, s.weight FROM agent_signature s WHERE s.feature = q.feature AND s.agent_id > q.me ORDER BY s.agent_id LIMIT ${SEED_POSTINGS_CAP})
          UNION ALL
          (SELECT s.agent_id, s.weight FROM agent_signature s WHERE s.feature = q.feature AND s.agent_id < q.me ORDER BY s.agent_id LIMIT ${SEED_POSTINGS_CAP})) w
        LIMIT ${SEED_POSTINGS_CAP}) p`.execute(db);
    windows = rows.map((r) => ({ feature: r.feature, agentId: r.agent_id, weight: Number(r.weight) }));
  }
  const probe = SignatureIndex.of(own, windows);
  const known = new Set(own.map((s) => s.agentId));
  const wanted = [...new Set(own.flatMap((s) => probe.candidatesOf(s.agentId)))].filter((id) => !known.has(id));
  return SignatureIndex.of([...own, ...(await readSignatures(db, wanted))], windows);
}

/** Agents read per statement when loading a snapshot. */
const SNAPSHOT_PAGE = 5000;

/**
 * Every signature, read in pages of 5,000 agents along the (agent_id, feature) index, in one
 * repeatable-read transaction: a rebuild committing meanwhile cannot mix two versions.
 */
export async function loadSignatureSnapshot(db: Db, windowCap = SEED_POSTINGS_CAP): Promise<SignatureIndex> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      await sql`SET TRANSACTION READ ONLY`.execute(trx);
      const builder = new SignatureBuilder();
      let after = '00000000-0000-0000-0000-000000000000';
      for (;;) {
        const { rows } = await sql<SigQueryRow>`
          SELECT agent_id, array_agg(feature) AS features, array_agg(weight) AS weights
          FROM agent_signature WHERE agent_id > ${after}::uuid
          GROUP BY agent_id ORDER BY agent_id LIMIT ${SNAPSHOT_PAGE}`.execute(trx);
        for (const r of rows) builder.add(r.agent_id, r.features, r.weights.map(Number));
        if (rows.length < SNAPSHOT_PAGE) break;
        after = rows[rows.length - 1]!.agent_id;
      }
      return builder.build(undefined, windowCap);
    });
}

/** Name of the population_stats row whose computed_at says when every signature was last rebuilt. */
export const SIGNATURES_STAT = 'signatures';

const snapshots = new WeakMap<Db, { version: string; index: Promise<SignatureIndex> }>();

/**
 * The snapshot of every signature as of the last full rebuild, loaded once per rebuild by each
 * worker process and shared by its pages (about 30 MB at 100k agents). A page ranks from it only
 * the agents whose signature is still the snapshot's (`computeSimilarMany` compares); an agent
 * refreshed by an event since the rebuild is ranked from PostgreSQL.
 */
export async function signatureSnapshot(db: Db): Promise<SignatureIndex | undefined> {
  const row = await db
    .selectFrom('population_stats')
    .select('computed_at')
    .where('name', '=', SIGNATURES_STAT)
    .executeTakeFirst();
  if (!row) return undefined;
  const version = new Date(row.computed_at).toISOString();
  let held = snapshots.get(db);
  if (held?.version !== version) {
    held = { version, index: loadSignatureSnapshot(db) };
    snapshots.set(db, held);
    const mine = held;
    mine.index.catch(() => {
      if (snapshots.get(db) === mine) snapshots.delete(db); // a failed load is retried by the next page
    });
  }
  return held.index;
}
