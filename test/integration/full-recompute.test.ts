import { expect } from 'chai';
import pg from 'pg';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { AGENT_BATCH_SIZE } from '../../jobs/agent-documents.job.js';
import { finishFullRecompute } from '../../src/domain/agents/full-recompute.use-cases.js';
import { countSimilarPagesLeft, planSimilarPages, recordSimilarPageDone } from '../../src/data/recompute.repository.js';

/**
 * The daily full recompute on a marketplace of several pages of agents whose similar lists were
 * never computed (a new marketplace, or one restored without them): every list is stored before
 * any score is computed, so one run leaves documents a second run finds unchanged.
 */
describe('the full recompute: similar lists first, then the documents', function () {
  this.timeout(180_000);
  let svc: TestService;
  let pool: pg.Pool;
  /** More than two pages, so lists written by a later page name agents of an earlier one. */
  const agents = AGENT_BATCH_SIZE * 2 + 50;

  before(async () => {
    svc = await startTestService();
    pool = new pg.Pool({ connectionString: svc.database.url, max: 2 });
    // Agents in a dozen overlapping groups by their profile's OASF skills: each has look-alikes
    // across the pages, in both directions of id order.
    const skills = Array.from({ length: 12 }, (_, i) => `'cat/skill_${i}'`).join(',');
    await pool.query(
      `INSERT INTO agents (id, handle, wallet_address, display_name, oasf_skills)
       SELECT md5('full' || g)::uuid, 'full-' || g, '0x' || lpad(to_hex(800000 + g), 40, '0'), 'Full ' || g,
              ARRAY(SELECT DISTINCT (ARRAY[${skills}])[1 + (g * k * 5 + k) % 12] FROM generate_series(1, 2 + g % 3) k)
       FROM generate_series(1, $1) g`,
      [agents],
    );
  });
  after(async () => {
    await pool?.end();
    await svc?.stop();
  });

  const documents = () => svc.service.runtime.queues.documents;
  /** Runs recompute-all under `run` and waits until the queue has nothing left of it. */
  const recompute = async (run: string) => {
    await documents().add('recompute-all', { run }, { jobId: `test-recompute-${run}` });
    await eventually(
      async () => {
        const stage = await documents().getJob(`recompute-all-documents-${run}`);
        if (!(await stage?.isCompleted())) return false;
        const counts = await documents().getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        return Object.values(counts).every((n) => n === 0);
      },
      150_000,
      200,
    );
  };
  /** Every agent's score.json write count. */
  const scoreWrites = async () =>
    (
      await pool.query<{ key: string; n: number }>(
        `SELECT key, publish_count AS n FROM published_documents WHERE key LIKE 'api/agents/full-%/score.json' ORDER BY key`,
      )
    ).rows;

  it('stores every similar list before any score is computed, and a second run rewrites no score', async () => {
    // The middle page's similar lists fail to be stored once: its job is retried, and the documents
    // wait for the retry.
    const { rows: ids } = await pool.query<{ id: string }>(
      `SELECT id FROM agents WHERE handle LIKE 'full-%' ORDER BY id OFFSET ${AGENT_BATCH_SIZE + 10} LIMIT 1`,
    );
    await pool.query(`
      CREATE SEQUENCE similar_failures;
      CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.agent_id = '${ids[0]!.id}' THEN
          IF nextval('similar_failures') = 1 THEN
            RAISE EXCEPTION 'the similar list could not be stored, this once';
          END IF;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER fail_once BEFORE INSERT ON agent_similar FOR EACH ROW EXECUTE FUNCTION fail_once()`);
    await recompute('first');
    await pool.query(
      'DROP TRIGGER fail_once ON agent_similar; DROP FUNCTION fail_once(); DROP SEQUENCE similar_failures',
    );
    const jobs = await documents().getJobs(['completed'], 0, -1);
    const ofRun = (name: string) => jobs.filter((j) => j?.name === name && j.id?.endsWith('-allfirst'));
    const similar = ofRun('agent-similar-batch');
    const pages = ofRun('agent-documents-batch');
    expect(similar).to.have.length(3);
    expect(pages).to.have.length(3);
    expect(similar.map((j) => j!.attemptsMade).sort()).to.deep.equal([1, 1, 2]);
    const lastListStored = Math.max(...similar.map((j) => j!.finishedOn!));
    for (const page of pages) expect(page!.processedOn).to.be.at.least(lastListStored);
    const stage = (await documents().getJob('recompute-all-documents-first'))!;
    expect(stage.returnvalue).to.include({ leftBehind: 0, queued: agents });
    const { rows: planned } = await pool.query<{ n: number; done: number }>(
      `SELECT count(*)::int AS n, count(done_at)::int AS done FROM recompute_pages WHERE run = 'first'`,
    );
    expect(planned[0]).to.deep.equal({ n: 3, done: 3 });
    // Taken while the pages ran (four workers' slots, three pages), the stage ran again until they
    // were all done, without counting a failure.
    expect(stage.attemptsStarted).to.be.greaterThan(1);
    expect(stage.attemptsMade).to.equal(1);
    // Every agent with look-alikes has its list, and some are listed by agents of another page.
    const { rows } = await pool.query<{ listed: number; across: number }>(
      `SELECT count(DISTINCT s.agent_id)::int AS listed,
              count(*) FILTER (WHERE (SELECT count(*) FROM agents x WHERE x.id < s.agent_id) / ${AGENT_BATCH_SIZE}
                                  <> (SELECT count(*) FROM agents x WHERE x.id < s.similar_id) / ${AGENT_BATCH_SIZE})::int AS across
       FROM agent_similar s JOIN agents a ON a.id = s.agent_id WHERE a.handle LIKE 'full-%'`,
    );
    expect(rows[0]!.listed).to.equal(agents);
    expect(rows[0]!.across).to.be.greaterThan(0);
    const before = await scoreWrites();
    expect(before).to.have.length(agents);

    await recompute('second');
    expect(await scoreWrites()).to.deep.equal(before);
  });

  it('the documents stage waits for planned pages not done, then goes on without them once its wait is over', async () => {
    const { db } = svc.service.runtime.database;
    const { rows } = await pool.query<{ id: string }>(
      `SELECT id FROM agents WHERE handle LIKE 'full-%' ORDER BY id LIMIT 2`,
    );
    const [a, b] = rows.map((r) => r.id) as [string, string];
    await planSimilarPages(db, 'waits', [a, b]);
    await recordSimilarPageDone(db, 'waits', a);
    const queuedPages: string[][] = [];
    let quantiles = 0;
    const deps = {
      db,
      recomputeQuantiles: async () => {
        quantiles++;
        return {};
      },
      queueDocumentPages: async (pages: string[][]) => {
        queuedPages.push(...pages);
      },
    };
    const since = Date.now();
    expect(
      await finishFullRecompute(deps, { name: 'waits', since }, AGENT_BATCH_SIZE, since + 1000, 60_000),
    ).to.deep.equal({ waiting: 1 });
    expect([quantiles, queuedPages.length]).to.deep.equal([0, 0]);
    // The wait over, it goes on and says how many pages it went without.
    const late = await finishFullRecompute(deps, { name: 'waits', since }, AGENT_BATCH_SIZE, since + 60_000, 60_000);
    expect(late).to.include({ leftBehind: 1 });
    expect(quantiles).to.equal(1);
    expect(queuedPages.flat()).to.include.members([a, b]);
    // A page planned again within the hour keeps being done; the label used again later plans it anew.
    await planSimilarPages(db, 'waits', [a]);
    expect(await countSimilarPagesLeft(db, 'waits')).to.equal(1);
    await pool.query(`UPDATE recompute_pages SET planned_at = now() - interval '2 hours' WHERE run = 'waits'`);
    await planSimilarPages(db, 'waits', [a, b]);
    expect(await countSimilarPagesLeft(db, 'waits')).to.equal(2);
  });
});
