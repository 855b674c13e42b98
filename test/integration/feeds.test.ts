import { expect } from 'chai';
import pg from 'pg';
import { startTestService, eventually, TEST_ADMIN_TOKEN, type TestService } from '../support/service.js';
import { registerAgent } from '../support/agents.js';
import { CHANGE_BATCH, indexFeed } from '../../src/data/projections.repository.js';
import { freshDatabase } from '../support/database.js';

interface FeedItem {
  handle: string;
  displayName: string | null;
  updatedAt: string;
}
interface Page {
  items: FeedItem[];
  nextCursor: string | null;
  nextSince: string | null;
  hasMore: boolean;
}

/**
 * The agent feed is mirrored by a crawler that walks every page and then polls with `since`,
 * while writers change agents concurrently (and one transaction stays open for a while). The
 * mirror must end equal to the database, without ever receiving the same state of an agent twice.
 */
describe('delta feeds: a crawler mirrors the marketplace while it changes', function () {
  this.timeout(90_000);
  let svc: TestService;
  let pool: pg.Pool;
  const AGENTS = 40;

  before(async () => {
    svc = await startTestService();
    pool = new pg.Pool({ connectionString: svc.database.url, max: 6 });
    await pool.query(
      `INSERT INTO agents (handle, wallet_address, display_name)
       SELECT 'feed-' || g, '0x' || lpad(to_hex(900000 + g), 40, '0'), 'v0' FROM generate_series(1, $1) g`,
      [AGENTS],
    );
  });
  after(async () => {
    await pool?.end();
    await svc?.stop();
  });

  const feedLag = async () => {
    const text = await (
      await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })
    ).text();
    return Number(/^feed_lag_seconds\{feed="agent"\} (\S+)$/m.exec(text)![1]);
  };
  const fetchPage = async (params: Record<string, string>) => {
    const res = await fetch(`${svc.url}/api/discovery/agents.json?${new URLSearchParams(params)}`);
    expect(res.status).to.equal(200);
    return (await res.json()) as Page;
  };

  it('walks every page, then polls, and ends equal to the database with no state seen twice', async () => {
    const mirror = new Map<string, string>();
    const seen = new Set<string>();
    const duplicates: string[] = [];
    const receive = (items: FeedItem[]) => {
      for (const i of items) {
        const state = `${i.handle}@${i.displayName}`;
        if (seen.has(state)) duplicates.push(state);
        seen.add(state);
        mirror.set(i.handle, i.displayName ?? '');
      }
    };

    // Writers: 200 profile changes spread over the walk, one of them inside a long transaction.
    let stop = false;
    const writers = (async () => {
      let n = 0;
      while (!stop && n < 200) {
        n++;
        const g = 1 + ((n * 7) % AGENTS);
        await pool.query(`UPDATE agents SET display_name = $1 WHERE handle = $2`, [`v${n}`, `feed-${g}`]);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const longTx = (async () => {
      const c = await pool.connect();
      await c.query('BEGIN');
      await c.query(`UPDATE agents SET display_name = 'long' WHERE handle = 'feed-${AGENTS}'`);
      await new Promise((r) => setTimeout(r, 1500));
      await c.query('COMMIT');
      c.release();
    })();

    // The crawler: walk with cursor (small pages, slowly), then poll with since.
    let page = await fetchPage({ limit: '7' });
    receive(page.items);
    while (page.nextCursor) {
      await new Promise((r) => setTimeout(r, 30));
      page = await fetchPage({ limit: '7', cursor: page.nextCursor });
      receive(page.items);
    }
    let since = page.nextSince!;
    await Promise.all([writers, longTx]);
    stop = true;
    const truth = async () =>
      new Map(
        (
          await pool.query<{ handle: string; display_name: string }>(
            `SELECT handle, display_name FROM agents WHERE handle LIKE 'feed-%'`,
          )
        ).rows.map((r) => [r.handle, r.display_name]),
      );
    await eventually(
      async () => {
        for (;;) {
          const p = await fetchPage({ limit: '50', since });
          receive(p.items);
          since = p.nextSince ?? since;
          if (!p.hasMore) break;
        }
        const db = await truth();
        return [...db].every(([h, name]) => mirror.get(h) === name) ? true : undefined;
      },
      20_000,
      100,
    );
    expect(duplicates, 'states received twice').to.deep.equal([]);
    expect(mirror.get(`feed-${AGENTS}`)).to.equal((await truth()).get(`feed-${AGENTS}`));
  });

  it('a change committed while an older transaction is still open waits for it, so the older one is never skipped', async () => {
    const start = await fetchPage({ limit: '200' });
    let since = start.nextSince!;
    while (true) {
      const p = await fetchPage({ limit: '200', since });
      since = p.nextSince ?? since;
      if (!p.hasMore) break;
    }
    const older = await pool.connect();
    await older.query('BEGIN');
    await older.query(`UPDATE agents SET display_name = 'older' WHERE handle = 'feed-1'`);
    await pool.query(`UPDATE agents SET display_name = 'newer' WHERE handle = 'feed-2'`);
    await indexFeed(svc.service.runtime.database.db, 'agent');
    const held = await fetchPage({ since, limit: '200' });
    expect(
      held.items.map((i) => i.handle),
      'the newer change waits behind the open transaction',
    ).to.not.include('feed-2');
    // Operators see the hold-up as feed lag.
    await new Promise((r) => setTimeout(r, 300));
    expect(await feedLag()).to.be.greaterThan(0.25);
    await older.query('COMMIT');
    older.release();
    const both = await eventually(
      async () => {
        const p = await fetchPage({ since, limit: '200' });
        const handles = p.items.map((i) => i.handle);
        return handles.includes('feed-1') && handles.includes('feed-2') ? handles : undefined;
      },
      10_000,
      100,
    );
    expect(both.indexOf('feed-1')).to.be.lessThan(both.indexOf('feed-2'));
    expect(await feedLag()).to.equal(0);
  });

  it('a long writing transaction in another database on the same server does not hold the feed back', async () => {
    const neighbour = await freshDatabase();
    const other = new pg.Client({ connectionString: neighbour.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE agents SET display_name = 'elsewhere'`); // assigns it a transaction id
      const since = new Date(Date.now() - 1000).toISOString();
      await pool.query(`UPDATE agents SET display_name = 'despite-neighbour' WHERE handle = 'feed-3'`);
      const seen = await eventually(
        async () => {
          const p = await fetchPage({ since, limit: '200' });
          return p.items.find((i) => i.handle === 'feed-3' && i.displayName === 'despite-neighbour');
        },
        10_000,
        100,
      );
      expect(seen).to.not.equal(undefined);
    } finally {
      await other.query('ROLLBACK');
      await other.end();
      await neighbour.drop();
    }
  });

  it('one transaction changing thousands of agents enters the feed in bounded batches, each agent at its own time', async () => {
    // The full recompute moves a few hundred agents per statement; feed times must stay unique.
    await pool.query(
      `INSERT INTO agents (handle, wallet_address, display_name)
       SELECT 'bulk-' || g, '0x' || lpad(to_hex(800000 + g), 40, '0'), 'bulk' FROM generate_series(1, 3000) g`,
    );
    // With fresh statistics the planner pulls the base-time subquery up into every row (seen on
    // the generated marketplace), which is what made times collide.
    await pool.query('ANALYZE agents, feed_entries');
    // A change their items show: one that shows nothing (a bio, a no-op update) moves no agent.
    await pool.query(`UPDATE agents SET display_name = 'bulk, renamed' WHERE handle LIKE 'bulk-%'`);
    // Batches of at most CHANGE_BATCH agents (a bounded statement at any size), until none is left.
    const batches: number[] = [];
    await eventually(
      async () => {
        const pass = await indexFeed(svc.service.runtime.database.db, 'agent');
        if (pass) batches.push(pass.written);
        return pass !== null && !pass.more;
      },
      15_000,
      20,
    );
    expect(Math.max(...batches)).to.be.at.most(CHANGE_BATCH);
    const { rows } = await pool.query<{ n: number; times: number; lag: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT feed_at)::int AS times,
              count(*) FILTER (WHERE e.feed_at IS NULL)::int AS lag
       FROM agents a LEFT JOIN feed_entries e ON e.kind = 'agent' AND e.entity_id = a.id WHERE a.handle LIKE 'bulk-%'`,
    );
    expect(rows[0]).to.deep.equal({ n: 3000, times: 3000, lag: 0 });
    await pool.query(`DELETE FROM agents WHERE handle LIKE 'bulk-%'`);
  });

  it('feed items carry score, health and links; bounds are enforced with 400 naming the parameter', async () => {
    const agent = await registerAgent(svc, 'feed-real');
    const item = await eventually(
      async () => (await fetchPage({ limit: '200', sort: 'top' })).items.find((i) => i.handle === agent.handle),
      15_000,
      100,
    );
    expect(item).to.include.keys('score', 'health', 'rank', 'links', 'walletAddress', 'verified');
    for (const [params, name] of [
      [{ limit: '0' }, 'limit'],
      [{ limit: '201' }, 'limit'],
      [{ since: 'yesterday' }, 'since'],
      [{ sort: 'best' }, 'sort'],
      [{ verified: 'maybe' }, 'verified'],
      [{ sort: 'top', cursor: '2026-11-21T00:00:00Z' }, 'cursor'],
    ] as const) {
      const res = await fetch(`${svc.url}/api/discovery/agents.json?${new URLSearchParams(params)}`);
      expect(res.status, JSON.stringify(params)).to.equal(400);
      expect((await res.json()).invalidParams.map((p: { name: string }) => p.name)).to.include(name);
    }
    const posts = await fetch(`${svc.url}/api/discovery/posts.json?limit=500`);
    expect(posts.status).to.equal(400);
  });
});
