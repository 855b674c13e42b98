import type { Db } from '../../data/db.js';
import {
  readEverySignature,
  readFeatureWindows,
  readSignatureRebuildTime,
  readSignatures,
} from '../../data/similarity.repository.js';
import { SEED_POSTINGS_CAP } from './seed-candidates.js';
import { SignatureBuilder, SignatureIndex } from './signature-index.js';

/**
 * What ranking `agentIds` reads, and only that, in three statements: their signatures, each seed
 * feature's window of agents, and the candidates' signatures. The single-agent recompute (a
 * domain event, the API's fallback render) ranks through this.
 */
export async function loadSignatureSubset(db: Db, agentIds: string[]): Promise<SignatureIndex> {
  const own = await readSignatures(db, agentIds);
  const seeds = SignatureIndex.of(own);
  const pairs = own.flatMap((s) => seeds.seedsOf(s.agentId).map((feature) => ({ agentId: s.agentId, feature })));
  const windows = await readFeatureWindows(db, pairs, SEED_POSTINGS_CAP);
  const probe = SignatureIndex.of(own, windows);
  const known = new Set(own.map((s) => s.agentId));
  const wanted = [...new Set(own.flatMap((s) => probe.candidatesOf(s.agentId)))].filter((id) => !known.has(id));
  return SignatureIndex.of([...own, ...(await readSignatures(db, wanted))], windows);
}

/**
 * Every signature, as one consistent snapshot (a rebuild committing meanwhile cannot mix two
 * versions), held in compact arrays as it is read, with the digest of them all.
 * @param windowCap agents read per seed feature (SEED_POSTINGS_CAP; other values only to measure what the cap costs)
 */
export async function loadSignatureSnapshot(db: Db, windowCap = SEED_POSTINGS_CAP): Promise<SignatureIndex> {
  const builder = new SignatureBuilder({ digest: true });
  await readEverySignature(db, (page) => {
    for (const s of page) builder.add(s.agentId, s.features, s.weights);
  });
  return builder.build(undefined, windowCap);
}

const snapshots = new WeakMap<Db, { version: string; index: Promise<SignatureIndex> }>();

/**
 * The snapshot of every signature as of the last full rebuild, loaded once per rebuild by each
 * worker process and shared by its pages (about 30 MB at 100k agents). A page ranks from it only
 * the agents whose signature is still the snapshot's (`recomputeAndStoreSimilar` compares); an
 * agent refreshed by an event since the rebuild is ranked from PostgreSQL. Undefined before the
 * first rebuild.
 */
export async function signatureSnapshot(db: Db): Promise<SignatureIndex | undefined> {
  const rebuilt = await readSignatureRebuildTime(db);
  if (!rebuilt) return undefined;
  const version = rebuilt.toISOString();
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
