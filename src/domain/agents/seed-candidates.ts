import { kthLargest } from './kth-largest.js';

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

/** Signature entries as three parallel arrays: entry i is agent[i] holding feature[i] with weight[i]. */
export interface SignatureEntries {
  feature: Int32Array;
  agent: Int32Array;
  weight: Float64Array;
}

/** Each feature's postings: feature f's entries are agent/weight[start[f], start[f + 1]). */
export interface Postings {
  start: Int32Array;
  agent: Int32Array;
  weight: Float64Array;
}

/**
 * Groups `entries` by feature for features numbered 0..featureCount-1, by a counting sort (time
 * linear in the entries). Stable: each feature's agents keep the entries' order, so they are
 * ascending when the entries are.
 */
export function postingsByFeature(featureCount: number, entries: SignatureEntries): Postings {
  const count = entries.feature.length;
  const start = new Int32Array(featureCount + 1);
  for (const f of entries.feature) {
    if (!(f >= 0 && f < featureCount)) throw new RangeError(`feature ${f} is outside 0..${featureCount - 1}`);
    start[f + 1] = (start[f + 1] ?? 0) + 1;
  }
  let sum = 0;
  for (let f = 0; f <= featureCount; f++) {
    sum += start[f] ?? 0;
    start[f] = sum;
  }
  const next = start.slice(0, featureCount);
  const agent = new Int32Array(count);
  const weight = new Float64Array(count);
  // Every index below is in bounds (features checked above; `next` stays inside its feature's range).
  for (let i = 0; i < count; i++) {
    const f = entries.feature[i] ?? 0;
    const at = next[f] ?? 0;
    next[f] = at + 1;
    agent[at] = entries.agent[i] ?? 0;
    weight[at] = entries.weight[i] ?? 0;
  }
  return { start, agent, weight };
}

/**
 * Position of each of `n` agents after agent `me` in id order, wrapping around (1 for the next
 * agent, n for `me` itself). Ties go to the agents that follow `me`, so no agent wins every tie (a
 * tie to the lowest id made the first few hundred agents everybody's similar agent, and their
 * incoming-similar score with it). Restricting the agents keeps their cyclic order, so a subset
 * breaks ties as the snapshot does.
 */
export function followingOrder(me: number, n: number): (agent: number) => number {
  return (a) => (a > me ? a - me : a - me + n);
}

/**
 * Chooses an agent's candidates from the postings of its seed features. Holds the scratch space
 * of the choice (one agent at a time; the choice is synchronous), so choosing allocates only the
 * list it returns.
 *
 * Array reads use indexes that lie within the arrays by construction (agent numbers below the
 * agent count, positions taken from `postings.start`), so their `?? 0` never applies; it stands
 * where a checked read would cost the hot loop a branch and an exception path for a case that
 * cannot occur.
 */
export class SeedCandidates {
  private readonly acc: Float64Array;
  private readonly touched: Int32Array;
  private readonly values: Float64Array;

  /**
   * @param agentCount the agents the postings number (0..agentCount-1)
   * @param windowCap agents read per seed feature (SEED_POSTINGS_CAP; other values only to measure what the cap costs)
   */
  constructor(
    private readonly postings: Postings,
    private readonly agentCount: number,
    private readonly windowCap = SEED_POSTINGS_CAP,
  ) {
    this.acc = new Float64Array(agentCount);
    this.touched = new Int32Array(agentCount);
    this.values = new Float64Array(agentCount);
  }

  /**
   * The candidates of agent `me`, whose seed features are `features[from, to)`: the 300 agents of
   * its seed windows with the most seed weight in common (ties to the agents following it), in no
   * particular order. A seed feature's window is up to `windowCap` of its agents following `me` in
   * id order, wrapping around to the first ones, `me` excluded.
   */
  of(me: number, features: Int32Array, from: number, to: number): number[] {
    const { acc, touched } = this;
    const { start: postStart, agent: postAgent, weight: postWeight } = this.postings;
    let t = 0;
    for (let s = from; s < to; s++) {
      // Inlined: this loop is most of the ranking's time.
      const f = features[s] ?? 0;
      const start = postStart[f] ?? 0;
      const end = postStart[f + 1] ?? 0;
      const first = this.lowerBound(start, end, me + 1);
      const mine = this.lowerBound(start, end, me);
      let left = this.windowCap;
      for (let i = first; i < end && left > 0; i++, left--) {
        const a = postAgent[i] ?? 0;
        const sum = acc[a] ?? 0;
        if (sum === 0) touched[t++] = a; // weights are ln(1 + N/df) > 0
        acc[a] = sum + (postWeight[i] ?? 0);
      }
      for (let i = start; i < mine && left > 0; i++, left--) {
        const a = postAgent[i] ?? 0;
        const sum = acc[a] ?? 0;
        if (sum === 0) touched[t++] = a;
        acc[a] = sum + (postWeight[i] ?? 0);
      }
    }
    const chosen = t <= MAX_CANDIDATES ? Array.from(touched.subarray(0, t)) : this.mostShared(me, t);
    for (let i = 0; i < t; i++) acc[touched[i] ?? 0] = 0;
    return chosen;
  }

  /** First position in postings [lo, hi) whose agent is `agent` or later. */
  private lowerBound(lo: number, hi: number, agent: number) {
    const postAgent = this.postings.agent;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((postAgent[mid] ?? 0) < agent) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Of the `t` agents touched, the 300 with the most seed weight; equal weights to the agents following `me`. */
  private mostShared(me: number, t: number): number[] {
    const { acc, touched } = this;
    const values = this.values.subarray(0, t);
    for (let i = 0; i < t; i++) values[i] = acc[touched[i] ?? 0] ?? 0;
    const threshold = kthLargest(values, MAX_CANDIDATES);
    const chosen: number[] = [];
    const ties: number[] = [];
    for (let i = 0; i < t; i++) {
      const a = touched[i] ?? 0;
      const sum = acc[a] ?? 0;
      if (sum > threshold) chosen.push(a);
      else if (sum === threshold) ties.push(a);
    }
    // Equal seed weight is common (agents with the same features): the ones following me win.
    const room = MAX_CANDIDATES - chosen.length;
    if (ties.length <= room) return chosen.concat(ties);
    const after = followingOrder(me, this.agentCount);
    const keys = Float64Array.from(ties, (a) => -after(a));
    const last = -kthLargest(keys, room);
    for (const a of ties) if (after(a) <= last) chosen.push(a);
    return chosen;
  }
}
