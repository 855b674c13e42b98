import { expect } from 'chai';
import pg from 'pg';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { connectMcp } from '../support/mcp.js';
import { publishSignedSkill } from '../support/skills.js';

const PUBLIC_ORIGIN = 'https://market.example';
const ALLOWED_ORIGIN = 'https://agents.example';

/** The official SDK client connected to /mcp from a browser page of `origin` (as a browser sends it). */
async function connectFrom(url: string, origin: string): Promise<Client> {
  const client = new Client({ name: 'market-test-browser', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { origin } } }),
  );
  return client;
}

describe('MCP endpoint: browser origins are checked, and search_skills is the search API', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let skillId: string;
  let mcp: Client;
  let pool: pg.Pool;

  const listTools = (origin?: string) =>
    fetch(`${svc.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(origin === undefined ? {} : { origin }),
      },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });

  /**
   * Runs `fn` while the search tier (read by every search of skills) is locked by a transaction of
   * the test's own, so that a search which reaches the database waits until `fn` is done.
   */
  async function whileSearchesWait<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('LOCK TABLE search_tier_posts IN ACCESS EXCLUSIVE MODE');
      return await fn(client);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  }

  /** search_skills over MCP, given at most 5 s: a search that waited on the lock would take longer. */
  const searchOverMcp = async (query: string, limit: number) =>
    (await mcp.callTool({ name: 'search_skills', arguments: { query, limit } }, undefined, {
      timeout: 5_000,
    })) as CallToolResult;

  before(async () => {
    svc = await startTestService({
      PUBLIC_BASE_URL: PUBLIC_ORIGIN,
      MCP_ALLOWED_ORIGINS: `${ALLOWED_ORIGIN}, https://tools.example:8443`,
      // One search at a time, none waiting: a second search while one runs is shed at once.
      SEARCH_CONCURRENCY: '1',
      SEARCH_QUEUE_MAX: '0',
    });
    pool = new pg.Pool({ connectionString: svc.database.url, max: 3 });
    seller = await registerAgent(svc, 'mcp-bounds-seller');
    skillId = await publishSignedSkill(seller, {
      title: 'Forecast writer',
      preview: 'Writes a forecast for a city.',
      priceAtomic: '0',
      tags: ['forecast'],
      skill: 'forecast-writer',
    });
    mcp = await connectMcp(svc.url);
  });
  after(async () => {
    await mcp?.close();
    await pool?.end();
    await svc?.stop();
  });

  describe('Origin (Streamable HTTP: servers must validate it against DNS rebinding)', () => {
    it('a page of another origin gets 403 origin_not_allowed, and nothing runs', async () => {
      for (const origin of [
        'https://evil.example',
        'http://market.example',
        'null',
        'https://agents.example.evil.example',
      ]) {
        const res = await listTools(origin);
        expect(res.status, origin).to.equal(403);
        expect(res.headers.get('content-type'), origin).to.match(/^application\/problem\+json/);
        const problem = await res.json();
        expect(problem.code, origin).to.equal('origin_not_allowed');
        expect(problem, origin).to.not.have.property('result');
      }
      let refused: unknown;
      try {
        await connectFrom(svc.url, 'https://evil.example');
      } catch (err) {
        refused = err;
      }
      expect(String(refused)).to.include('403');
    });

    it('agents without an Origin, the public origin, the configured origins and (outside production) loopback pages are served', async () => {
      for (const origin of [
        undefined,
        PUBLIC_ORIGIN,
        ALLOWED_ORIGIN,
        'https://tools.example:8443',
        'http://localhost:6274',
        'http://127.0.0.1:5173',
        'http://[::1]:8080',
      ]) {
        const res = await listTools(origin);
        expect(res.status, origin).to.equal(200);
        expect((await res.json()).result.tools.length, origin).to.equal(11);
      }
      const browser = await connectFrom(svc.url, ALLOWED_ORIGIN);
      try {
        expect((await browser.listTools()).tools.map((t) => t.name)).to.include('search_skills');
      } finally {
        await browser.close();
      }
    });
  });

  describe('search_skills runs in the search API: its queue, its cache, its bounds', () => {
    it('while the search slots are taken, an MCP search is shed with search_busy as an HTTP search is, and counted alike', async () => {
      const shedBefore = await shedCount();
      const held = await whileSearchesWait(async () => {
        // An HTTP search takes the only slot and waits on the lock.
        const holding = fetch(`${svc.url}/api/discovery/search?q=forecast%20holding`);
        await eventually(async () => {
          const { rows } = await pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%search_tier_posts%' AND pid <> pg_backend_pid()`,
          );
          return rows[0]!.n > 0;
        });
        const busy = await searchOverMcp('forecast busy', 10);
        expect(busy.isError, JSON.stringify(busy.content)).to.equal(true);
        expect(busy.structuredContent).to.have.nested.property('error.code', 'search_busy');
        expect(busy.structuredContent).to.have.nested.property('error.retryAfterSeconds', 1);
        const http = await fetch(`${svc.url}/api/discovery/search?q=forecast%20busy&type=posts&limit=10`);
        expect(http.status).to.equal(503);
        expect((await http.json()).code).to.equal('search_busy');
        // Wrapped: a promise returned as it is would be awaited here, before the lock is released.
        return { holding };
      });
      const heldAnswer = await held.holding;
      expect(heldAnswer.status, await heldAnswer.clone().text()).to.equal(200);
      expect((await shedCount()) - shedBefore, 'searches shed (queue_full): the MCP one and the HTTP one').to.equal(2);
    });

    it('an MCP search asked within 30 s of the same HTTP search is that answer, kept, without asking the database again', async () => {
      const http = await fetch(`${svc.url}/api/discovery/search?q=forecast%20writer&type=posts&limit=7`);
      expect(http.status).to.equal(200);
      const answered = await http.json();
      expect(answered.results.map((r: { id: string }) => r.id)).to.include(skillId);
      await whileSearchesWait(async () => {
        const result = await searchOverMcp('forecast writer', 7);
        expect(result.isError, JSON.stringify(result.content)).to.not.equal(true);
        const skills = (result.structuredContent as { skills: { postId: string; score: number }[] }).skills;
        expect(skills.map((s) => s.postId)).to.deep.equal(
          answered.results.filter((r: { type: string }) => r.type === 'post').map((r: { id: string }) => r.id),
        );
        expect(skills.find((s) => s.postId === skillId)).to.deep.include({
          score: answered.results.find((r: { id: string }) => r.id === skillId).score,
        });
      });
    });

    it("the query and limit bounds are the search API's", async () => {
      const long = await searchOverMcp('x'.repeat(201), 10);
      expect(long.isError).to.equal(true);
      expect((await fetch(`${svc.url}/api/discovery/search?q=${'x'.repeat(201)}`)).status).to.equal(400);
      const many = await searchOverMcp('forecast', 51);
      expect(many.isError).to.equal(true);
      expect((await fetch(`${svc.url}/api/discovery/search?q=forecast&limit=51`)).status).to.equal(400);
    });
  });

  /** searches_shed_total{reason="queue_full"} of this process, from /metrics. */
  async function shedCount(): Promise<number> {
    const text = await (
      await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.adminToken}` } })
    ).text();
    return Number(/^searches_shed_total\{reason="queue_full"\} (\d+)$/m.exec(text)?.[1] ?? 0);
  }
});
