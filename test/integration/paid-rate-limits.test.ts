import { expect } from 'chai';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { publishSignedSkill } from '../support/skills.js';
import { MCP_BATCH_MAX } from '../../src/api/routes/mcp.routes.js';

/** The `paid` limit of this test's service: more than one full batch, less than two. */
const PAID_LIMIT = 25;

/** The RateLimit header of an answer that left `n` points of the paid limit. */
const remaining = (n: number) => new RegExp(`^limit=${PAID_LIMIT}, remaining=${n}, reset=\\d+$`);

/** A batch of `n` JSON-RPC requests, each a tools/list (what it asks does not matter, its count does). */
const toolsLists = (n: number): JSONRPCMessage[] =>
  Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0' as const, id: i + 1, method: 'tools/list' }));

describe('per-client rate limits on the paid routes: paid reads and MCP messages', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let paidId: string;
  let clients = 0;
  /** Each test is its own client: an address of its own, named by the one proxy the service trusts. */
  const newClient = () => `198.51.100.${++clients}`;

  /** GET /api/posts/{id} as `client`, the body read to the end. */
  const read = async (client: string, query = '', headers: Record<string, string> = {}) => {
    const res = await fetch(`${svc.url}/api/posts/${paidId}${query}`, {
      headers: { 'x-forwarded-for': client, ...headers },
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
  };

  /**
   * One POST of `messages` to /mcp through the official SDK's Streamable HTTP transport, as
   * `client`: the JSON-RPC answers it delivered, and the HTTP answer's status, headers and problem.
   */
  async function postToMcp(client: string, messages: JSONRPCMessage[]) {
    let http: Response | undefined;
    const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), {
      requestInit: { headers: { 'x-forwarded-for': client } },
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        http = res.clone();
        return res;
      },
    });
    const answers: JSONRPCMessage[] = [];
    transport.onmessage = (m) => answers.push(m);
    await transport.start();
    let refused: unknown;
    try {
      await transport.send(messages);
    } catch (err) {
      refused = err;
    } finally {
      await transport.close();
    }
    const problem = refused && http ? await http.json() : undefined;
    return { status: http?.status, headers: http?.headers, answers, problem, refused };
  }

  before(async () => {
    svc = await startTestService({ RATE_LIMITS: `paid=${PAID_LIMIT}`, TRUST_PROXY: '1' });
    seller = await registerAgent(svc, 'limits-seller');
    paidId = await publishSignedSkill(seller, {
      title: 'Weather limits',
      preview: 'A skill read too often.',
      priceAtomic: '1500000',
      tags: ['weather'],
      skill: 'weather-limits',
    });
  });
  after(async () => svc?.stop());

  it('beyond the paid limit, a client asking for the full view gets 429 rate_limited with Retry-After, and its previews are still served', async () => {
    const client = newClient();
    for (let i = 0; i < PAID_LIMIT; i++) {
      const paid = await read(client, '?view=full');
      expect(paid.status, `paid read ${i + 1}`).to.equal(402);
      expect(paid.headers.get('ratelimit'), `paid read ${i + 1}`).to.match(remaining(PAID_LIMIT - i - 1));
    }
    const refused = await read(client, '?view=full');
    expect(refused.status).to.equal(429);
    expect(refused.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(JSON.parse(refused.text)).to.include({ code: 'rate_limited' });
    expect(JSON.parse(refused.text).detail).to.include('paid');
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
    // Crawlers read previews: they are not counted, even from a client over its paid limit.
    for (let i = 0; i < PAID_LIMIT + 5; i++) {
      const preview = await read(client);
      expect(preview.status, `preview ${i + 1}`).to.equal(200);
      expect(preview.headers.get('ratelimit')).to.equal(null);
    }
    expect((await read(client, '?view=preview')).status).to.equal(200);
  });

  it('a request carrying a payment header counts whatever view it asks for, X-PAYMENT (v1) and PAYMENT-SIGNATURE (v2) alike', async () => {
    const client = newClient();
    const statuses: number[] = [];
    for (let i = 0; i < PAID_LIMIT; i++) {
      const header: Record<string, string> =
        i % 2 ? { 'x-payment': 'not a payment' } : { 'payment-signature': 'not a payment either' };
      statuses.push((await read(client, '', header)).status);
    }
    expect(
      statuses.filter((s) => s === 429),
      String(statuses),
    ).to.deep.equal([]);
    const refused = await read(client, '', { 'payment-signature': 'one too many' });
    expect(refused.status).to.equal(429);
    expect(JSON.parse(refused.text).code).to.equal('rate_limited');
    // Another client is counted on its own.
    expect((await read(newClient(), '?view=full')).status).to.equal(402);
  });

  it('an MCP batch costs one point per message: a full batch leaves what the limit has beyond it, and the next batch over the limit is 429', async () => {
    const client = newClient();
    const first = await postToMcp(client, toolsLists(MCP_BATCH_MAX));
    expect(first.status).to.equal(200);
    expect(first.answers).to.have.length(MCP_BATCH_MAX);
    expect(first.headers?.get('ratelimit')).to.match(remaining(PAID_LIMIT - MCP_BATCH_MAX));
    const over = await postToMcp(client, toolsLists(PAID_LIMIT - MCP_BATCH_MAX + 1));
    expect(over.status).to.equal(429);
    expect(over.answers, 'no message of a refused batch runs').to.deep.equal([]);
    expect(over.problem).to.include({ code: 'rate_limited' });
    expect(Number(over.headers?.get('retry-after'))).to.be.within(1, 60);
    // The paid reads of the same client share the bucket: it is spent.
    expect((await read(client, '?view=full')).status).to.equal(429);
  });

  it(`a batch of more than ${MCP_BATCH_MAX} messages is a 400 batch_too_large before any message runs, and costs nothing`, async () => {
    const client = newClient();
    const tooLarge = await postToMcp(client, toolsLists(MCP_BATCH_MAX + 1));
    expect(tooLarge.status).to.equal(400);
    expect(tooLarge.headers?.get('content-type')).to.match(/^application\/problem\+json/);
    expect(tooLarge.problem).to.include({ code: 'batch_too_large' });
    expect(tooLarge.problem.detail).to.include(`at most ${MCP_BATCH_MAX}`);
    expect(tooLarge.answers).to.deep.equal([]);
    // Nothing was taken from the client's limit: a full batch still passes with the whole limit left.
    const full = await postToMcp(client, toolsLists(MCP_BATCH_MAX));
    expect(full.status).to.equal(200);
    expect(full.headers?.get('ratelimit')).to.match(remaining(PAID_LIMIT - MCP_BATCH_MAX));
  });

  it('MCP counts against the paid limit, no longer the search limit', async () => {
    const client = newClient();
    const one = await postToMcp(client, toolsLists(1));
    expect(one.status).to.equal(200);
    expect(one.headers?.get('ratelimit-policy')).to.equal(`${PAID_LIMIT};w=60`);
  });

  it('the OpenAPI document states the paid limit of the paid read and of /mcp', async () => {
    const doc = await (await fetch(`${svc.url}/openapi.json`)).json();
    expect(doc.paths['/api/posts/{postId}'].get.responses['429'].description).to.include('paid');
    expect(doc.paths['/mcp'].post.responses['429'].description).to.include('paid');
    expect(doc.paths['/mcp'].post.responses['400'].description).to.include('batch_too_large');
  });
});
