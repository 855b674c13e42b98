import { expect } from 'chai';
import pg from 'pg';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { TEST_PG_URL } from '../support/env.js';
import { registerAgent } from '../support/agents.js';
import { sql } from 'kysely';
import { withStatementTimeout } from '../../src/data/db.js';
import { DependencyUnavailableError } from '../../src/platform/errors.js';

/** One answer as a client sees it. */
interface Answer {
  status: number;
  code?: string;
  retryAfter: string | null;
}

/**
 * The database failing under the service: its connections terminated (what a failover, a pooler
 * restart or an idle timeout does) while clients read, and a statement blocked past the statement
 * timeout. The service runs in this process, so a pg client's unhandled 'error' event would be an
 * uncaught exception here: the tests listen for one and fail on it.
 */
describe('faults: the database connection is lost or a statement hangs', function () {
  this.timeout(120_000);
  const STATEMENT_TIMEOUT_MS = 3_000;
  let svc: TestService;
  let admin: pg.Client;
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);

  before(async () => {
    svc = await startTestService({ DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) });
    admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
  });
  after(async () => {
    await admin?.end();
    await svc?.stop();
  });
  beforeEach(() => {
    uncaught.length = 0;
    process.on('uncaughtException', onUncaught);
  });
  afterEach(() => {
    process.off('uncaughtException', onUncaught);
  });

  let serial = 0;
  /** A search for a word never asked before: answered by PostgreSQL, not by the search cache. */
  const search = async (): Promise<Answer> => {
    const res = await fetch(`${svc.url}/api/discovery/search?q=probe${serial++}`);
    const body = res.headers.get('content-type')?.includes('json') ? ((await res.json()) as { code?: string }) : {};
    return { status: res.status, code: body.code, retryAfter: res.headers.get('retry-after') };
  };

  /** Terminates every server process of the test's database except the admin's own; returns how many. */
  const terminateAll = async (): Promise<number> => {
    const { rows } = await admin.query<{ ok: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [svc.database.name],
    );
    return rows.filter((r) => r.ok).length;
  };

  it('when the database connections are terminated again and again under load, clients get only 200 or 503 with Retry-After, and reads succeed again once it stops', async () => {
    expect((await search()).status).to.equal(200);
    const answers: Answer[] = [];
    let stop = false;
    const client = async () => {
      while (!stop) answers.push(await search());
    };
    const clients = Array.from({ length: 4 }, client);
    const ROUNDS = 12;
    let terminated = 0;
    let rounds = 0;
    for (; rounds < ROUNDS && !uncaught.length; rounds++) {
      // Each round lets the pool open new connections and the clients use them, then kills them all.
      await eventually(async () => answers.length > (rounds + 1) * 8, 20_000, 10);
      terminated += await terminateAll();
    }
    stop = true;
    await Promise.all(clients);

    const recoveredAt = performance.now();
    await eventually(async () => (await search()).status === 200, 15_000, 100);
    const recoveryMs = Math.round(performance.now() - recoveredAt);
    const unavailable = answers.filter((a) => a.status === 503);
    console.log(
      `      ${answers.length} requests over ${rounds} rounds (${terminated} server processes terminated): ` +
        `${answers.length - unavailable.length} answered 200, ${unavailable.length} answered 503; reads succeeded again after ${recoveryMs} ms`,
    );

    expect(uncaught, 'uncaught exceptions (a crash outside mocha)').to.deep.equal([]);
    expect(rounds).to.equal(ROUNDS);
    expect(terminated, 'the rounds terminated the service connections').to.be.greaterThan(ROUNDS);
    const unexpected = answers.filter(
      (a) => a.status !== 200 && !(a.status === 503 && a.code === 'dependency_unavailable'),
    );
    expect(unexpected, 'answers other than 200 and 503 dependency_unavailable').to.deep.equal([]);
    for (const a of unavailable) expect(Number(a.retryAfter)).to.be.greaterThan(0);
    expect(unavailable.length, 'some requests met a terminated connection').to.be.greaterThan(0);
  });

  it('when a statement blocks past the statement timeout, the client gets 503 dependency_unavailable with Retry-After instead of waiting, and the next read succeeds', async () => {
    const locker = new pg.Client({ connectionString: svc.database.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      // Searches read posts and agents; an exclusive lock (what a table rewrite takes) blocks them.
      await locker.query('LOCK TABLE posts, agents IN ACCESS EXCLUSIVE MODE');
      const started = performance.now();
      const answer = await search();
      const ms = Math.round(performance.now() - started);
      console.log(`      a search blocked by a lock was answered ${answer.status} ${answer.code} after ${ms} ms`);
      expect(answer).to.deep.include({ status: 503, code: 'dependency_unavailable' });
      expect(Number(answer.retryAfter)).to.be.greaterThan(0);
      expect(ms).to.be.below(STATEMENT_TIMEOUT_MS * 4);
      // A scrape while the feed-lag query is blocked answers with the last values, marked stale.
      const scrapeStarted = performance.now();
      const metrics = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.adminToken}` } });
      const scrapeMs = Math.round(performance.now() - scrapeStarted);
      expect(metrics.status).to.equal(200);
      expect(await metrics.text()).to.match(/^database_gauges_stale 1$/m);
      expect(scrapeMs, 'a scrape waits for PostgreSQL at most half a second').to.be.below(STATEMENT_TIMEOUT_MS);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    expect(await search()).to.deep.include({ status: 200 });
    expect(uncaught).to.deep.equal([]);
  });

  it('after its connections were terminated, background work goes on: a new agent enters the feed and its events are dispatched', async () => {
    const { db } = svc.service.runtime.database;
    // The feed indexer and the outbox dispatcher poll in this process; a failed poll must not end them.
    for (let round = 0; round < 3; round++) {
      await terminateAll();
      await eventually(async () => (await search()).status === 200, 15_000, 50);
    }
    const agent = await registerAgent(svc, `after-faults-${Date.now().toString(36)}`);
    await eventually(
      () =>
        db
          .selectFrom('feed_entries')
          .select('entity_id')
          .where('kind', '=', 'agent')
          .where('entity_id', '=', agent.id)
          .executeTakeFirst(),
      20_000,
    );
    await eventually(async () => {
      const events = await db
        .selectFrom('domain_events')
        .select('dispatched_at')
        .where('agent_id', '=', agent.id)
        .execute();
      return events.length > 0 && events.every((e) => e.dispatched_at !== null);
    }, 20_000);
    expect(uncaught).to.deep.equal([]);
  });

  it('a batch job may run statements past the statement timeout of requests, and the connection goes back with the default timeout', async () => {
    const { db } = svc.service.runtime.database;
    const sleep = sql`SELECT pg_sleep(${(STATEMENT_TIMEOUT_MS + 500) / 1000})`;
    let refused: unknown;
    await sleep.execute(db).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(DependencyUnavailableError);
    await withStatementTimeout(STATEMENT_TIMEOUT_MS * 3, () => sleep.execute(db));
    // Every idle connection of the pool, not just the next one, has the default again.
    const settings = await Promise.all(
      Array.from({ length: 4 }, () =>
        db.connection().execute(async (c) => {
          const { rows } = await sql<{
            t: string;
          }>`SELECT setting AS t FROM pg_settings WHERE name = 'statement_timeout'`.execute(c);
          await sql`SELECT pg_sleep(0.05)`.execute(c);
          return rows[0]!.t;
        }),
      ),
    );
    expect(new Set(settings)).to.deep.equal(new Set([String(STATEMENT_TIMEOUT_MS)]));
  });
});
