import { randomUUID } from 'node:crypto';
import type { Db } from '../../data/db.js';
import {
  analyzeFeatureTables,
  markSignatureRebuild,
  readBuyerOverlap,
  readFeatureSourcesDigest,
  readSignatureRebuild,
  readSignatures,
  replaceAgentFeatures,
  replaceEveryAgentFeatures,
  replaceEverySignature,
  replaceFeatureFrequencies,
  stampSignatureRebuild,
  type OverlapBounds,
} from '../../data/similarity.repository.js';
import {
  markListsRankedFrom,
  readListsRankedFrom,
  readSimilarLists,
  readStoredListLines,
  replaceSimilarLists,
  similarListLine,
} from '../../data/similar-lists.repository.js';
import { readHandles } from '../../data/agents.repository.js';
import { codeFingerprint } from '../../platform/code-fingerprint.js';
import type { Ranked, SignatureIndex } from './signature-index.js';
import { loadSignatureSubset } from './signature-loaders.js';

export interface SimilarAgent {
  agentId: string;
  handle: string;
  similarity: number;
  method: 'idf-jaccard' | 'buyer-overlap';
  shared: string[];
}

/** Features per agent that represent it in similarity: its rarest, which say the most about it. */
export const SIGNATURE_SIZE = 50;
/** Shared features kept per similar agent. */
const SHARED_KEPT = 10;
/**
 * The buyer overlap's reach: a seller is its last 200 sales' buyers, 20 sellers are read per
 * buyer, and the 100 sharing most buyers are scored. One sale to a seller with 44,000 sales read
 * every purchase of its 40,000 buyers (1M rows, 10-15 s) when it was unbounded.
 */
const BUYER_OVERLAP: OverlapBounds = { sample: 200, perBuyer: 20, candidates: 100 };

/**
 * Refreshes one agent's features (its profile OASF skills and domains, and the tags and OASF
 * categories of its published skills, named by family: `tag:pdf`, `skill:…`, `domain:…`) and its
 * similarity signature. Returns the signature's entries.
 */
export async function refreshFeatures(db: Db, agentId: string): Promise<number> {
  return replaceAgentFeatures(db, agentId, SIGNATURE_SIZE);
}

/**
 * What every agent's features and signatures are derived from: the feature sources' digest
 * (`readFeatureSourcesDigest`), the code that derives them (`codeFingerprint`: the sources' SQL,
 * the families, the idf) and the signature's size. The same value means a rebuild would write
 * every feature, frequency and signature again as they are.
 */
async function featureSourcesDigest(db: Db): Promise<string> {
  return `${await readFeatureSourcesDigest(db)};${codeFingerprint()};size=${SIGNATURE_SIZE}`;
}

/**
 * Rebuilds every agent's features, the frequencies and every signature in set-based passes (the
 * full recompute starts with it, so the per-agent similarities that follow see true frequencies),
 * unless nothing they are derived from changed since the last rebuild (`rebuilt: false`): then the
 * features, the frequencies and the signatures are left as that rebuild and the refreshes since
 * wrote them (a refresh of an agent whose sources did not change writes the same rows; one that
 * writes other rows, as after the frequencies moved, forgets the digest). The digest is read
 * before and after rebuilding, and a refresh during it clears the rebuild's mark: either has the
 * next run rebuild again.
 * `force` rebuilds whatever the digest says. Returns the signature entries (written, or as they
 * stand) and whether it rebuilt.
 */
export async function rebuildAllFeatures(
  db: Db,
  opts: { force?: boolean } = {},
): Promise<{ signatures: number; rebuilt: boolean }> {
  const sources = await featureSourcesDigest(db);
  const last = await readSignatureRebuild(db);
  if (!opts.force && last?.sources === sources) return { signatures: last.signatures, rebuilt: false };
  // Until the stamp, a row names this rebuild: a refresh that writes other rows meanwhile clears it.
  const marker = `rebuilding:${randomUUID()}`;
  await markSignatureRebuild(db, marker);
  await replaceEveryAgentFeatures(db);
  await refreshFeatureFrequencies(db);
  const signatures = await replaceEverySignature(db, SIGNATURE_SIZE);
  // Millions of rows just replaced: the planner needs their statistics before the first lookup.
  await analyzeFeatureTables(db);
  // Workers hold a snapshot of every signature for the pages that follow; this names it. A source
  // changed while the rebuild ran may or may not be in it, and a refresh meanwhile may have written
  // weights of other frequencies: then no digest is kept, and the next run rebuilds again.
  const unchanged = (await featureSourcesDigest(db)) === sources;
  await stampSignatureRebuild(db, signatures, { marker, sources: unchanged ? sources : null });
  return { signatures, rebuilt: true };
}

/**
 * Recomputes every feature's document frequency (how many agents have it) and N; with the
 * population job. Signatures keep the weights of their last refresh until their agent's next one.
 * Returns the features counted.
 */
export async function refreshFeatureFrequencies(db: Db): Promise<number> {
  return replaceFeatureFrequencies(db);
}

/**
 * What a list ranked from `snapshot` is ranked from: the digest of every signature in it, the
 * code that ranks (`codeFingerprint`: the similarity, the candidates, the ties, the shared
 * features) and the list's length. Ranking from a snapshot reads nothing else but which agents
 * still exist (an agent deleted since has its entries removed with it), so a list stored with the
 * same source is the list ranking would give again. Undefined for an index without a digest (a subset).
 */
export function similarListSource(snapshot: SignatureIndex, limit: number): string | undefined {
  if (snapshot.digest === undefined) return undefined;
  return `${snapshot.digest};${codeFingerprint()};limit=${limit}`;
}

/** A similarity as stored and published: to the millionth, at most 1. */
const rounded = (similarity: number) => Math.min(1, Math.round(similarity * 1e6) / 1e6);

/**
 * Recomputes the most similar agents of each of `agentIds` and stores the lists that changed in
 * agent_similar (read by the incoming-similar score component and similar.json). Returns every
 * list, in the order of `agentIds`.
 *
 * Similarity is the IDF-weighted Jaccard index of the agents' signatures: Σ idf over shared
 * features / Σ idf over the union, idf(f) = ln(1 + N / df(f)) over the N agents with features. A
 * signature is an agent's 50 rarest features (the most telling; prolific agents have thousands).
 * Candidates are the agents whose signature holds one of this agent's 8 rarest features (at most
 * 2,000 read per feature, those following this agent in id order), the 300 sharing most of them
 * (see `SignatureIndex`). Ranked from `snapshot` when given and the agent's current signature is
 * the snapshot's (the full recompute's pages), otherwise from the rows the ranking needs, read
 * from PostgreSQL. An agent without features, or sharing none, falls back to buyer overlap: the
 * Jaccard index of the two sellers' recent buyer wallets (`readBuyerOverlap`).
 */
export async function recomputeAndStoreSimilar(
  db: Db,
  agentIds: string[],
  limit = 10,
  snapshot?: SignatureIndex,
): Promise<Map<string, SimilarAgent[]>> {
  const ids = [...new Set(agentIds)];
  const lists = new Map<string, SimilarAgent[]>(ids.map((id) => [id, []]));
  if (!ids.length) return lists;
  // A few spare entries: an agent deleted since (signatures have no foreign key) is dropped below.
  const { ranked, fromSnapshot } = await rankBySignature(db, ids, limit + 5, snapshot);
  const handles = await readHandles(db, [...new Set([...ranked.values()].flat().map((s) => s.agentId))]);
  for (const [me, list] of ranked) {
    const similar: SimilarAgent[] = [];
    for (const s of list) {
      const handle = handles.get(s.agentId);
      if (handle === undefined) continue;
      if (similar.length === limit) break;
      const shared = s.shared.slice(0, SHARED_KEPT);
      similar.push({ agentId: s.agentId, handle, similarity: rounded(s.similarity), method: 'idf-jaccard', shared });
    }
    lists.set(me, similar);
  }
  const unmatched = ids.filter((id) => !lists.get(id)?.length);
  for (const o of await readBuyerOverlap(db, unmatched, BUYER_OVERLAP, limit)) {
    const similarity = rounded(o.similarity);
    lists.get(o.of)?.push({ agentId: o.agentId, handle: o.handle, similarity, method: 'buyer-overlap', shared: [] });
  }
  // Most recomputes find the same lists: then one read replaces the rewrite.
  const stored = await readStoredListLines(db, ids);
  const changed = new Map<string, SimilarAgent[]>();
  for (const [id, list] of lists) if ((stored.get(id) ?? '') !== similarListLine(list)) changed.set(id, list);
  await replaceSimilarLists(db, changed);
  // Lists ranked from the snapshot alone are recorded as such; a buyer-overlap list reads the
  // sales, so it is ranked again every time.
  const source = snapshot && similarListSource(snapshot, limit);
  if (source) {
    const bySnapshot = new Map<string, string>();
    for (const id of ids) {
      const list = lists.get(id) ?? [];
      if (fromSnapshot.has(id) && list[0]?.method === 'idf-jaccard') bySnapshot.set(id, similarListLine(list));
    }
    await markListsRankedFrom(db, bySnapshot, source);
  }
  return lists;
}

/**
 * A full recompute's similar page: ranks, from the run's snapshot, the agents whose stored list
 * was not ranked from this very snapshot (`similarListSource`), and stores what changed. The rest
 * would rank exactly as stored, so they are left alone: a run that finds every signature as the
 * last run did ranks only the agents whose lists come from buyer overlap or from an event since.
 * Returns the agents ranked and those left alone.
 */
export async function rankSimilarPage(
  db: Db,
  agentIds: string[],
  snapshot: SignatureIndex | undefined,
  limit = 10,
): Promise<{ ranked: number; kept: number }> {
  const source = snapshot && similarListSource(snapshot, limit);
  const kept = source ? await readListsRankedFrom(db, agentIds, source) : new Set<string>();
  const rest = agentIds.filter((id) => !kept.has(id));
  await recomputeAndStoreSimilar(db, rest, limit, snapshot);
  return { ranked: rest.length, kept: kept.size };
}

/**
 * The stored similar list of each of `agentIds` (empty when it has none), as
 * `recomputeAndStoreSimilar` returns them: the full recompute's document pages read what its
 * similar pages stored just before (see docs/documents.md).
 */
export async function readStoredSimilar(db: Db, agentIds: string[]): Promise<Map<string, SimilarAgent[]>> {
  const stored = await readSimilarLists(db, agentIds);
  return new Map(agentIds.map((id) => [id, stored.get(id)?.list ?? []]));
}

/**
 * The `want` best agents by signature of each of `ids` that has one, ranked in the worker:
 * PostgreSQL scoring 300 candidates an agent cost ~6 ms an agent at 100k agents; the same
 * ranking over arrays in memory costs a fraction of a millisecond.
 */
async function rankBySignature(
  db: Db,
  ids: string[],
  want: number,
  snapshot: SignatureIndex | undefined,
): Promise<{ ranked: Map<string, Ranked[]>; fromSnapshot: Set<string> }> {
  const ranked = new Map<string, Ranked[]>();
  // From the snapshot only agents whose signature is still the snapshot's: one an event refreshed
  // since the rebuild is ranked from its current rows, not overwritten with the rebuild's ranking.
  if (snapshot) {
    for (const row of await readSignatures(db, ids))
      if (snapshot.sameSignature(row)) ranked.set(row.agentId, snapshot.rank(row.agentId, want));
  }
  const fromSnapshot = new Set(ranked.keys());
  const rest = ids.filter((id) => !ranked.has(id));
  if (rest.length) {
    const subset = await loadSignatureSubset(db, rest);
    for (const id of rest) ranked.set(id, subset.rank(id, want));
  }
  return { ranked, fromSnapshot };
}
