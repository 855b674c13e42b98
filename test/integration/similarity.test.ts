import { sql } from 'kysely';
import { expect } from 'chai';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DB } from '../../src/data/schema.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import {
  markListsRankedFrom,
  readSimilarListDigests,
  readSimilarLists,
  readStoredListLines,
  replaceSimilarLists,
} from '../../src/data/similar-lists.repository.js';
import { captureStatements, tableScans } from '../support/explain.js';
import { eventually } from '../support/service.js';
import {
  markSignatureRebuild,
  readSignatureRebuild,
  stampSignatureRebuild,
} from '../../src/data/similarity.repository.js';
import {
  rankSimilarPage,
  similarListSource,
  readStoredSimilar,
  recomputeAndStoreSimilar,
  rebuildAllFeatures,
  refreshFeatureFrequencies,
  refreshFeatures,
} from '../../src/domain/agents/similar.js';
import { SEED_POSTINGS_CAP } from '../../src/domain/agents/seed-candidates.js';
import {
  loadSignatureSnapshot,
  loadSignatureSubset,
  signatureSnapshot,
} from '../../src/domain/agents/signature-loaders.js';

/**
 * A marketplace where the candidate cap binds: 6,000 agents over a dozen categories, so every
 * seed feature has more than 2,000 agents and most agents have look-alikes with the very same
 * features (exact ties).
 */
describe('similar agents at scale: the snapshot and the per-agent reads rank alike', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  let pool: pg.Pool;
  let db: Kysely<DB>;
  let ids: string[];

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 4 });
    pool.on('error', () => undefined); // idle clients of a database being dropped
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    const skills = Array.from({ length: 12 }, (_, i) => `'cat/skill_${i}'`).join(',');
    await pool.query(`
      INSERT INTO agents (id, handle, wallet_address, display_name, oasf_skills)
      SELECT md5('sim' || g)::uuid, 'sim-' || g, '0x' || lpad(to_hex(900000 + g), 40, '0'), 'Sim ' || g,
             ARRAY(SELECT DISTINCT (ARRAY[${skills}])[1 + (g * k * 7 + k) % 12] FROM generate_series(1, 2 + g % 3) k)
      FROM generate_series(1, 6000) g`);
    await rebuildAllFeatures(db);
    ids = (await pool.query<{ id: string }>('SELECT id FROM agents ORDER BY id')).rows.map((r) => r.id);
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('the cap binds: a seed feature has more agents than one window reads', async () => {
    const { rows } = await pool.query<{ n: number }>('SELECT max(df)::int AS n FROM feature_df');
    expect(rows[0]!.n).to.be.greaterThan(SEED_POSTINGS_CAP);
  });

  it('ranks every sampled agent the same from the snapshot and from its own reads', async () => {
    const snapshot = await loadSignatureSnapshot(db);
    expect(snapshot.size).to.equal(6000);
    const sample = ids.filter((_, i) => i % 97 === 0 || i > 5990); // the last ones wrap around
    for (const id of sample) {
      const subset = await loadSignatureSubset(db, [id]);
      expect(subset.candidatesOf(id)).to.have.members(snapshot.candidatesOf(id));
      expect(subset.rank(id, 10)).to.deep.equal(snapshot.rank(id, 10));
    }
    // Several agents read at once (their windows overlap) rank as each alone does.
    const together = await loadSignatureSubset(db, sample);
    for (const id of sample) expect(together.rank(id, 10)).to.deep.equal(snapshot.rank(id, 10));
    // And through the whole pipeline (names, rounding, the stored lists).
    const viaSnapshot = await recomputeAndStoreSimilar(db, sample, 10, snapshot);
    const viaReads = await recomputeAndStoreSimilar(db, sample, 10);
    expect([...viaReads]).to.deep.equal([...viaSnapshot]);
    expect([...viaReads.values()].every((l) => l.length === 10)).to.equal(true);
    // The same lists again: recognised as stored, not rewritten (the rows keep the transaction that wrote them).
    const versions = async () =>
      (
        await db
          .selectFrom('agent_similar')
          .select(sql<string>`xmin::text`.as('v'))
          .where('agent_id', 'in', sample)
          .orderBy('agent_id')
          .orderBy('rank')
          .execute()
      ).map((r) => r.v);
    const before = await versions();
    expect(before).to.have.length(sample.length * 10);
    await recomputeAndStoreSimilar(db, sample, 10, snapshot);
    expect(await versions()).to.deep.equal(before);
    // A list that differs from the stored one is rewritten.
    await db
      .updateTable('agent_similar')
      .set({ shared: [] })
      .where('agent_id', '=', sample[0]!)
      .where('rank', '=', 1)
      .execute();
    await recomputeAndStoreSimilar(db, sample, 10, snapshot);
    const after = await versions();
    expect(after.slice(10)).to.deep.equal(before.slice(10));
    expect(after.slice(0, 10)).to.not.deep.equal(before.slice(0, 10));
    expect(
      (await recomputeAndStoreSimilar(db, [sample[0]!], 10, snapshot)).get(sample[0]!)![0]!.shared,
    ).to.not.deep.equal([]);
  });

  it('similarities are the IDF-weighted Jaccard index of the signatures, best first', async () => {
    const lists = await recomputeAndStoreSimilar(db, ids.slice(0, 20), 10, await loadSignatureSnapshot(db));
    const { rows } = await pool.query<{ agent_id: string; feature: string; weight: number }>(
      'SELECT agent_id, feature, weight FROM agent_signature',
    );
    const sig = new Map<string, Map<string, number>>();
    for (const r of rows)
      (sig.get(r.agent_id) ?? sig.set(r.agent_id, new Map()).get(r.agent_id)!).set(r.feature, r.weight);
    for (const [me, list] of lists) {
      const mine = sig.get(me)!;
      for (const s of list) {
        const theirs = sig.get(s.agentId)!;
        let inter = 0;
        let union = 0;
        for (const f of new Set([...mine.keys(), ...theirs.keys()])) {
          inter += Math.min(mine.get(f) ?? 0, theirs.get(f) ?? 0);
          union += Math.max(mine.get(f) ?? 0, theirs.get(f) ?? 0);
        }
        expect(s.similarity).to.be.closeTo(inter / union, 1e-6);
        expect(s.shared).to.have.members([...mine.keys()].filter((f) => theirs.has(f)).slice(0, 10));
      }
      const sims = list.map((s) => s.similarity);
      expect(sims).to.deep.equal([...sims].sort((a, b) => b - a));
    }
  });

  it("ties do not make the same few agents everybody's similar agent", async () => {
    // Hundreds of agents have exactly the same features: who wins a tie decides whose
    // incoming-similar count (a score component) grows.
    const snapshot = await loadSignatureSnapshot(db);
    const incoming = new Map<string, number>();
    const sample = ids.filter((_, i) => i % 10 === 0);
    for (const id of sample)
      for (const s of snapshot.rank(id, 10)) incoming.set(s.agentId, (incoming.get(s.agentId) ?? 0) + 1);
    const most = Math.max(...incoming.values());
    expect(most, 'lists naming the most-named agent').to.be.at.most(sample.length / 20);
    expect(incoming.size, 'distinct agents named').to.be.greaterThan(sample.length * 5);
  });

  it('frequencies refreshed by two jobs at once (population job, full recompute) do not fail', async () => {
    const counts = await Promise.all([
      refreshFeatureFrequencies(db),
      refreshFeatureFrequencies(db),
      refreshFeatureFrequencies(db),
    ]);
    expect(new Set(counts).size).to.equal(1);
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM feature_df');
    expect(rows[0]!.n).to.equal(counts[0]);
  });

  it('a worker loads the snapshot once per rebuild of the signatures; a rebuild keeps every index', async () => {
    const indexes = async () =>
      (
        await pool.query<{ d: string }>(
          `SELECT indexdef AS d FROM pg_indexes WHERE tablename IN ('agent_features', 'agent_signature') ORDER BY 1`,
        )
      ).rows.map((r) => r.d);
    const before = await indexes();
    expect(before.length).to.be.at.least(4);
    const first = await signatureSnapshot(db);
    expect(await signatureSnapshot(db)).to.equal(first);
    expect(await rebuildAllFeatures(db, { force: true })).to.deep.include({ rebuilt: true });
    expect(await indexes()).to.deep.equal(before);
    const second = await signatureSnapshot(db);
    expect(second).to.not.equal(first);
    expect(second!.size).to.equal(6000);
  });

  it('a page leaves alone the lists ranked from the same snapshot; a changed signature or another write has them ranked again', async () => {
    // Agents no test above ranked from a snapshot (those ranked every 97th).
    const page = ids.filter((_, i) => i >= 600 && i % 97 !== 0).slice(0, 100);
    const versions = async () =>
      (
        await pool.query<{ v: string }>(
          'SELECT xmin::text AS v FROM agent_similar WHERE agent_id = ANY($1) ORDER BY agent_id, rank',
          [page],
        )
      ).rows.map((r) => r.v);
    const first = (await signatureSnapshot(db))!;
    expect(first.digest).to.match(/^[0-9a-f]{64}$/);
    // Ranked once from this snapshot (a list already stored the same is recorded as such too).
    expect(await rankSimilarPage(db, page, first)).to.deep.equal({ ranked: 100, kept: 0 });
    const stored = await versions();
    expect(stored).to.have.length(1000);
    const before = await readStoredSimilar(db, page);
    // The same snapshot again: nothing ranked, nothing written.
    expect(await rankSimilarPage(db, page, first)).to.deep.equal({ ranked: 0, kept: 100 });
    expect(await versions()).to.deep.equal(stored);
    // Signatures rebuilt to the same content, read in another order: the same digest, still left alone.
    await rebuildAllFeatures(db, { force: true });
    const rebuilt = (await signatureSnapshot(db))!;
    expect(rebuilt).to.not.equal(first);
    expect(rebuilt.digest).to.equal(first.digest);
    expect(await rankSimilarPage(db, page, rebuilt)).to.deep.equal({ ranked: 0, kept: 100 });
    // A list written another way (an event's recompute from PostgreSQL) is no longer the snapshot's: ranked again.
    const edited = page[5]!;
    await db.updateTable('agent_similar').set({ shared: [] }).where('agent_id', '=', edited).execute();
    await recomputeAndStoreSimilar(db, [edited], 10);
    // A page that ranked it before that write records nothing for it: the stored list is no longer the one it ranked.
    await markListsRankedFrom(db, new Map([[edited, 'the list ranked before']]), similarListSource(rebuilt, 10)!);
    expect(await rankSimilarPage(db, page, rebuilt)).to.deep.equal({ ranked: 1, kept: 99 });
    expect(await readStoredSimilar(db, page)).to.deep.equal(before);
    // One agent's features change: every signature's weights move with the frequencies, so the
    // digest differs and the whole page is ranked again, with what the change moved.
    const other = ids[4321]!;
    await pool.query(`UPDATE agents SET oasf_skills = '{cat/skill_1,cat/skill_2,cat/skill_9}' WHERE id = $1`, [other]);
    expect(await rebuildAllFeatures(db)).to.deep.include({ rebuilt: true });
    const changed = (await signatureSnapshot(db))!;
    expect(changed.digest).to.not.equal(first.digest);
    expect(await rankSimilarPage(db, page, changed)).to.deep.equal({ ranked: 100, kept: 0 });
    const fresh = await recomputeAndStoreSimilar(db, page, 10); // from PostgreSQL, as an event would
    expect(await readStoredSimilar(db, page)).to.deep.equal(fresh);
  });

  it('a stored list reads back as stored: handles, similarities to the last bit, shared features, none for buyer overlap', async () => {
    const [me, a, b] = [ids[10]!, ids[11]!, ids[12]!];
    const list = [
      { agentId: a, similarity: 0.123457, method: 'idf-jaccard' as const, shared: ['skill:cat/skill_1', 'tag:x y'] },
      { agentId: b, similarity: 1 / 3, method: 'buyer-overlap' as const, shared: [] },
    ];
    await replaceSimilarLists(db, new Map([[me, list]]));
    const handles = (
      await pool.query<{ id: string; handle: string }>('SELECT id, handle FROM agents WHERE id = ANY($1)', [[a, b]])
    ).rows;
    const handleOf = new Map(handles.map((h) => [h.id, h.handle]));
    expect((await readStoredSimilar(db, [me, ids[13]!])).get(me)).to.deep.equal(
      list.map((e) => ({ ...e, handle: handleOf.get(e.agentId) })),
    );
  });

  it("a stored list's digest is the same read alone or with the list, and moves with any entry, handles included", async () => {
    const [me, a, b] = [ids[20]!, ids[21]!, ids[22]!];
    const list = [
      { agentId: a, similarity: 0.5, method: 'idf-jaccard' as const, shared: ['tag:é ü'] },
      { agentId: b, similarity: 0.25, method: 'buyer-overlap' as const, shared: [] },
    ];
    await replaceSimilarLists(db, new Map([[me, list]]));
    const digestAlone = async () => (await readSimilarListDigests(db, [me, ids[23]!])).get(me);
    const first = await digestAlone();
    expect(first).to.match(/^[0-9a-f]{32}$/);
    expect((await readSimilarLists(db, [me])).get(me)?.digest).to.equal(first);
    expect((await readSimilarListDigests(db, [ids[23]!])).size).to.equal(0);
    const seen = new Set([first]);
    const moved = async (change: () => Promise<unknown>) => {
      await change();
      const now = await digestAlone();
      expect(seen.has(now), 'a new digest').to.equal(false);
      expect((await readSimilarLists(db, [me])).get(me)?.digest).to.equal(now);
      seen.add(now);
    };
    await moved(() => replaceSimilarLists(db, new Map([[me, [{ ...list[0]!, similarity: 0.500001 }, list[1]!]]])));
    await moved(() => replaceSimilarLists(db, new Map([[me, [list[1]!, list[0]!]]])));
    await moved(() => replaceSimilarLists(db, new Map([[me, [{ ...list[0]!, shared: ['tag:é'] }, list[1]!]]])));
    await moved(() => pool.query("UPDATE agents SET handle = 'sim-digest-renamed' WHERE id = $1", [a]));
  });

  it('reads the lists and their digests through the primary key, whatever the statistics say', async () => {
    // Statistics taken before the lists are written, as a full recompute's first pass writes them
    // after the last ANALYZE: `= ANY` planned from them scanned every list (0.5 s a page at 100k).
    await pool.query('ANALYZE agent_similar');
    await pool.query(`
      INSERT INTO agent_similar (agent_id, similar_id, rank, similarity, method)
      SELECT a.id, b.id, r, 0.1, 'idf-jaccard'
      FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM agents) a
      JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM agents) b ON b.n = (a.n + 97) % 6000 + 1,
      generate_series(1, 10) r
      WHERE a.n BETWEEN 3000 AND 5000
      ON CONFLICT DO NOTHING`);
    const page = ids.slice(3100, 3200);
    const reads: Array<() => Promise<Map<string, unknown>>> = [
      () => readSimilarListDigests(db, page),
      () => readSimilarLists(db, page),
      () => readStoredListLines(db, page),
    ];
    for (const read of reads) {
      const { result, statements } = await captureStatements('agent_similar', read);
      expect(result.size).to.equal(100);
      expect(statements).to.have.length(1);
      const scans = await tableScans(pool, statements[0]!, 'agent_similar');
      // The page's 1,000 entries and no other: a lookup of each agent's key range (by index or bitmap).
      expect(scans.map((s) => [s.type === 'Seq Scan', s.rows, s.removed])).to.deep.equal([[false, 1000, 0]]);
    }
  });

  it('a list written while its agent is being renamed takes the new handle, whoever writes it', async () => {
    const entry = (agentId: string) => ({ agentId, similarity: 0.5, method: 'idf-jaccard' as const, shared: [] });
    /** `write` started while `renamed` is being renamed to `handle`: it waits for the rename, then reads the new handle. */
    const duringRename = async (renamed: string, handle: string, write: () => Promise<unknown>) => {
      const renaming = await pool.connect();
      try {
        await renaming.query('BEGIN');
        await renaming.query('UPDATE agents SET handle = $2 WHERE id = $1', [renamed, handle]);
        const writing = write();
        const waiting = eventually(
          async () =>
            (
              await pool.query(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()",
              )
            ).rowCount === 1,
          10_000,
          20,
        ).then(() => 'waiting for the rename');
        waiting.catch(() => undefined);
        expect(await Promise.race([writing.then(() => 'written'), waiting])).to.equal('waiting for the rename');
        await renaming.query('COMMIT');
        await writing;
      } finally {
        renaming.release();
      }
    };
    const listed = async (me: string) => (await readStoredSimilar(db, [me])).get(me)?.map((s) => s.handle);
    // The repository's write, which locks the agents first.
    await duringRename(ids[31]!, 'sim-in-flight', () =>
      replaceSimilarLists(db, new Map([[ids[30]!, [entry(ids[31]!)]]])),
    );
    expect(await listed(ids[30]!)).to.deep.equal(['sim-in-flight']);
    // Any other write: the entry's own trigger reads the handle under that lock.
    await duringRename(ids[33]!, 'sim-in-flight-too', () =>
      pool.query(
        "INSERT INTO agent_similar (agent_id, similar_id, rank, similarity, method) VALUES ($1, $2, 1, 0.5, 'idf-jaccard')",
        [ids[32]!, ids[33]!],
      ),
    );
    expect(await listed(ids[32]!)).to.deep.equal(['sim-in-flight-too']);
  });

  it('an agent whose features changed since the snapshot is ranked from its current signature', async () => {
    const snapshot = (await signatureSnapshot(db))!;
    const id = ids[123]!;
    const stale = snapshot.rank(id, 10);
    await pool.query(`UPDATE agents SET oasf_skills = '{cat/skill_5}' WHERE id = $1`, [id]);
    await refreshFeatures(db, id);
    const fresh = await recomputeAndStoreSimilar(db, [id], 10); // from PostgreSQL
    const page = await recomputeAndStoreSimilar(db, [id], 10, snapshot);
    expect(page).to.deep.equal(fresh);
    expect(fresh.get(id)!.map((s) => s.similarity)).to.not.deep.equal(
      stale.map((s) => Math.round(s.similarity * 1e6) / 1e6),
    );
  });

  it('the full rebuild is left out while nothing the features come from changed, and runs when a source did', async () => {
    const [author, profile] = [ids[200]!, ids[201]!];
    const rebuild = async () => (await rebuildAllFeatures(db)).rebuilt;
    const signatureRows = async () =>
      (
        await pool.query<{ v: string }>('SELECT xmin::text AS v FROM agent_signature ORDER BY agent_id, feature')
      ).rows.map((r) => r.v);
    const featuresOf = async (id: string) =>
      (
        await pool.query<{ feature: string }>('SELECT feature FROM agent_features WHERE agent_id = $1 ORDER BY 1', [id])
      ).rows.map((r) => r.feature);
    await rebuildAllFeatures(db, { force: true });
    const snapshot = await signatureSnapshot(db);
    const rows = await signatureRows();
    // Nothing changed: no row written, and workers keep their snapshot.
    expect(await rebuild()).to.equal(false);
    expect(await signatureRows()).to.deep.equal(rows);
    expect(await signatureSnapshot(db)).to.equal(snapshot);
    // What no feature is made of changes nothing either.
    await pool.query(`UPDATE agents SET display_name = 'Renamed', bio = 'A new bio' WHERE id = $1`, [author]);
    await pool.query(
      `INSERT INTO posts (author_id, status, title, preview, tags, skill_name) VALUES ($1, 'draft', 'A draft skill', 'A draft', '{drafted}', 'a-draft-skill')`,
      [author],
    );
    expect(await rebuild()).to.equal(false);
    // A published skill's tag is a feature: rebuilt, and the tag is one of its author's features.
    const {
      rows: [post],
    } = await pool.query<{ id: string }>(
      `INSERT INTO posts (author_id, status, title, preview, tags, oasf_domains, skill_name, published_at)
       VALUES ($1, 'published', 'A published skill', 'Published', '{rare-tag}', '{finance/banking}', 'a-published-skill', now()) RETURNING id`,
      [author],
    );
    expect(await rebuild()).to.equal(true);
    expect(await featuresOf(author)).to.include.members(['tag:rare-tag', 'domain:finance/banking']);
    expect(await signatureSnapshot(db)).to.not.equal(snapshot);
    expect(await rebuild()).to.equal(false);
    // Its tags edited, then the skill unpublished: each has the features rebuilt.
    await pool.query(`UPDATE posts SET tags = '{other-tag}' WHERE id = $1`, [post!.id]);
    expect(await rebuild()).to.equal(true);
    expect(await featuresOf(author))
      .to.include('tag:other-tag')
      .and.not.include('tag:rare-tag');
    await pool.query(`UPDATE posts SET oasf_skills = '{nlp/summarization}' WHERE id = $1`, [post!.id]);
    expect(await rebuild()).to.equal(true);
    expect(await featuresOf(author)).to.include('skill:nlp/summarization');
    await pool.query(`UPDATE posts SET status = 'unpublished' WHERE id = $1`, [post!.id]);
    expect(await rebuild()).to.equal(true);
    expect(await featuresOf(author)).to.not.include('tag:other-tag');
    // An agent's own OASF category is a feature too.
    await pool.query(`UPDATE agents SET oasf_domains = '{health/clinics}' WHERE id = $1`, [profile]);
    expect(await rebuild()).to.equal(true);
    expect(await featuresOf(profile)).to.include('domain:health/clinics');
    await pool.query(`UPDATE agents SET oasf_skills = '{cat/skill_7}' WHERE id = $1`, [profile]);
    expect(await rebuild()).to.equal(true);
    expect(await featuresOf(profile)).to.include('skill:cat/skill_7');
    expect(await rebuild()).to.equal(false);
    // An event's refresh that writes the rows the rebuild wrote keeps the digest...
    await refreshFeatures(db, profile);
    expect(await rebuild()).to.equal(false);
    // ...one that writes others (the frequencies moved since, so its weights did) forgets it.
    await pool.query(`UPDATE feature_df SET df = df + 7 WHERE feature = 'domain:health/clinics'`);
    await refreshFeatures(db, profile);
    expect(await rebuild()).to.equal(true);
    expect(await rebuild()).to.equal(false);
  });

  it('a rebuild keeps its digest only if no refresh wrote other rows and no other rebuild began while it ran', async () => {
    const stamped = async () => (await readSignatureRebuild(db))?.sources;
    await markSignatureRebuild(db, 'rebuilding:a');
    await stampSignatureRebuild(db, 1, { marker: 'rebuilding:a', sources: 'digest-a' });
    expect(await stamped()).to.equal('digest-a');
    // A refresh that wrote other rows while it ran (the frequencies moved its weights): no digest.
    await markSignatureRebuild(db, 'rebuilding:b');
    await pool.query(`UPDATE feature_df SET df = df + 3 WHERE feature = 'domain:health/clinics'`);
    await refreshFeatures(db, ids[201]!);
    await stampSignatureRebuild(db, 1, { marker: 'rebuilding:b', sources: 'digest-b' });
    expect(await stamped()).to.equal(null);
    // Another rebuild began meanwhile: neither keeps one.
    await markSignatureRebuild(db, 'rebuilding:c');
    await markSignatureRebuild(db, 'rebuilding:d');
    await stampSignatureRebuild(db, 1, { marker: 'rebuilding:c', sources: 'digest-c' });
    expect(await stamped()).to.equal(null);
    // Its sources moved during it (the digest read after differs): none either.
    await markSignatureRebuild(db, 'rebuilding:e');
    await stampSignatureRebuild(db, 1, { marker: 'rebuilding:e', sources: null });
    expect(await stamped()).to.equal(null);
    // Whatever the stamp, the next full recompute rebuilds, then leaves the features alone.
    expect((await rebuildAllFeatures(db)).rebuilt).to.equal(true);
    expect((await rebuildAllFeatures(db)).rebuilt).to.equal(false);
  });
});
