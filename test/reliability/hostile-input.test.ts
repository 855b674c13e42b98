import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { skillBody } from '../support/skills.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
}

/**
 * One test per class of client input that could reach PostgreSQL or a parser unchecked and come
 * back as a 500: each is the client's 4xx with a problem body and a stable code, and leaves
 * nothing behind.
 */
describe('reliability: hostile input gets a 4xx problem, never a 500', function () {
  this.timeout(60_000);
  let svc: TestService;
  let seller: Agent;
  let postId: string;

  before(async () => {
    svc = await startTestService({ RATE_LIMITS: 'off' });
    seller = await registerAgent(svc, 'hostile-seller');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Hostile input skill',
        preview: 'A skill to aim hostile requests at.',
        priceAtomic: '1000000',
        tags: ['x'],
        body: skillBody('hostile-input-skill', '# x'),
      },
    });
    postId = (await created.json()).id;
    expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' })).status).to.equal(200);
  });
  after(async () => svc?.stop());

  function raw(method: string, target: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
    const url = new URL(svc.url);
    return new Promise((resolve, reject) => {
      const r = http.request(
        {
          host: url.hostname,
          port: url.port,
          method,
          path: target,
          headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json });
          });
        },
      );
      r.on('error', reject);
      r.end(body);
    });
  }

  function expectProblem(a: Answer, status: number, code: string) {
    expect(a.status, a.body).to.equal(status);
    expect(a.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(a.headers['access-control-allow-origin']).to.equal('*');
    expect(a.json.code).to.equal(code);
    expect(a.json.status).to.equal(status);
  }

  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
  const b64url = (s: string) => Buffer.from(s).toString('base64url');

  it('malformed percent-encoding in a path segment is 400 malformed_uri', async () => {
    expectProblem(await raw('GET', '/api/agents/%E0%A4%A/health.json?x=1'), 400, 'malformed_uri');
    expectProblem(await raw('GET', `/api/posts/%ED%A0%80`), 400, 'malformed_uri');
    expectProblem(await raw('GET', '/api/payments/%'), 400, 'malformed_uri');
  });

  it('a NUL character or a lone surrogate in an id, a query or a JSON body is 400 naming the field, and nothing is stored', async () => {
    expectProblem(await raw('GET', `/api/posts/${postId}%00`), 400, 'invalid_request');
    const search = await raw('GET', '/api/discovery/search?q=hel%00lo');
    expectProblem(search, 400, 'invalid_request');
    expect(search.json.invalidParams[0]).to.include({ name: 'q', in: 'query' });
    const body = Buffer.from('{"bio":"I write skills \\u0000 with care for agents and people"}');
    const nul = await raw(
      'PATCH',
      '/api/agents/me',
      { authorization: `Bearer ${seller.token}`, 'content-type': 'application/json' },
      body,
    );
    expectProblem(nul, 400, 'invalid_request');
    expect(nul.json.invalidParams[0]).to.include({ name: 'bio', in: 'body' });
    const surrogate = Buffer.from(
      '{"title":"A title \\ud800 broken","preview":"p","priceAtomic":"0","body":{"files":[{"path":"SKILL.md","content":"x"}]}}',
    );
    expectProblem(
      await raw(
        'POST',
        '/api/posts',
        { authorization: `Bearer ${seller.token}`, 'content-type': 'application/json' },
        surrogate,
      ),
      400,
      'invalid_request',
    );
    const { rows } = await svc.service.runtime.database.pool.query(
      `SELECT bio FROM agents WHERE handle = 'hostile-seller'`,
    );
    expect(rows[0].bio ?? '').not.to.include('care for agents and people');
  });

  it('a feed cursor that names no real instant (February 30th, year 0, a ±99:99 offset) is 400', async () => {
    for (const cursor of [
      '2026-02-30T00:00:00Z',
      '0000-01-01T00:00:00Z',
      '2026-01-01T00:00:00+99:99',
      '1969-06-01T00:00:00Z',
    ]) {
      expectProblem(
        await raw('GET', `/api/discovery/agents.json?cursor=${encodeURIComponent(cursor)}`),
        400,
        'invalid_request',
      );
      expectProblem(
        await raw('GET', `/api/discovery/posts.json?since=${encodeURIComponent(cursor)}`),
        400,
        'invalid_request',
      );
    }
  });

  it('a bearer token whose segments are not JSON is 401 token_invalid', async () => {
    for (const token of [
      `${b64url('{"alg":"ES256","typ":"JWT","kid":"k"}')}.${b64url('not json')}.sig`,
      `${b64url('not json')}.${b64url('not json either')}.sig`,
      `${b64url('{"alg":"ES256","kid":{"a":1}}')}.${b64url('[1,2')}.x`,
      'a.b.c',
    ]) {
      expectProblem(await raw('GET', '/api/agents/me', { authorization: `Bearer ${token}` }), 401, 'token_invalid');
    }
  });

  it('a body with a broken or unknown Content-Encoding is 400 or 415, and a non-JSON body is 415', async () => {
    const auth = { authorization: `Bearer ${seller.token}`, 'content-type': 'application/json' };
    const gz = gzipSync(Buffer.from('{"bio":"x"}'));
    expectProblem(
      await raw('PATCH', '/api/agents/me', { ...auth, 'content-encoding': 'gzip' }, gz.subarray(0, gz.length - 6)),
      400,
      'malformed_request_body',
    );
    expectProblem(
      await raw('PATCH', '/api/agents/me', { ...auth, 'content-encoding': 'gzip' }, Buffer.from('not gzip at all')),
      400,
      'malformed_request_body',
    );
    expectProblem(
      await raw('PATCH', '/api/agents/me', { ...auth, 'content-encoding': 'x-unknown' }, Buffer.from('{}')),
      415,
      'unsupported_content_encoding',
    );
    expectProblem(
      await raw('PATCH', '/api/agents/me', { ...auth, 'content-type': 'text/plain' }, Buffer.from('{"bio":"x"}')),
      415,
      'unsupported_media_type',
    );
  });

  it('payment headers with a NUL, a lone surrogate or numeric extremes are refused as invalid_payment_header (402), and no payment is recorded', async () => {
    const chain = svc.service.runtime.chain;
    const now = Math.floor(Date.now() / 1000);
    const authorization = (over: Record<string, unknown>) => ({
      from: '0x1111111111111111111111111111111111111111',
      to: seller.account.address,
      value: '1000000',
      validAfter: String(now - 60),
      validBefore: String(now + 300),
      nonce: `0x${'ab'.repeat(32)}`,
      ...over,
    });
    const v2 = (auth: Record<string, unknown>, extra: Record<string, unknown> = { name: 'USDC', version: '2' }) => ({
      x402Version: 2,
      accepted: {
        scheme: 'exact',
        network: `eip155:${chain.chainId}`,
        asset: chain.usdc.address,
        amount: '1000000',
        payTo: seller.account.address,
        maxTimeoutSeconds: 300,
        extra,
      },
      payload: { signature: `0x${'11'.repeat(65)}`, authorization: auth },
      resource: { url: `${svc.url}/api/posts/${postId}?view=full` },
    });
    const cases = [
      v2(authorization({}), { name: 'USDC\u0000', version: '2' }),
      v2(authorization({}), { name: 'USDC\uD800', version: '2' }),
      v2(authorization({ validAfter: '-100000000000000' })),
      v2(authorization({ validAfter: '1e400' })),
      v2(authorization({ value: `1${'0'.repeat(80)}` })),
      v2(authorization({ validBefore: 1.5 })),
    ];
    for (const header of cases) {
      const a = await raw('GET', `/api/posts/${postId}?view=full`, { 'payment-signature': b64(header) });
      expect(a.status, a.body).to.equal(402);
      expect(a.json.code).to.equal('invalid_payment_header');
    }
    const { rows } = await svc.service.runtime.database.pool.query(
      `SELECT count(*)::int AS n FROM payments WHERE post_id = $1`,
      [postId],
    );
    expect(rows[0].n).to.equal(0);
  });

  it('a method a path does not serve is 405 with Allow, not 404', async () => {
    const a = await raw('DELETE', '/api/discovery/search?q=ab');
    expectProblem(a, 405, 'method_not_allowed');
    expect(a.headers.allow).to.equal('GET, HEAD, OPTIONS');
    const b = await raw('PUT', `/api/posts/${postId}`);
    expectProblem(b, 405, 'method_not_allowed');
    expect(b.headers.allow).to.include('GET').and.to.include('PATCH');
    expectProblem(await raw('GET', '/no/such/path'), 404, 'route_not_found');
  });

  it("requests Node's parser refuses (oversize headers, a malformed request, an unknown Expect) get a problem body with CORS", async () => {
    expectProblem(await raw('GET', '/healthz', { 'x-big': 'a'.repeat(40_000) }), 431, 'headers_too_large');
    expectProblem(await raw('GET', '/healthz', { expect: 'something-else' }), 417, 'expectation_failed');
    const url = new URL(svc.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname, () =>
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).to.match(/^HTTP\/1\.1 400/);
    expect(reply)
      .to.include('application/problem+json')
      .and.to.include('"code":"malformed_http_request"')
      .and.to.include('Access-Control-Allow-Origin: *');
  });

  it("every answer carries a request id for its log lines: the caller's X-Request-Id when it is a plain token, else a new one", async () => {
    const a = await raw('GET', '/healthz', { 'x-request-id': 'caller-chosen-1' });
    expect(a.headers['x-request-id']).to.equal('caller-chosen-1');
    const b = await raw('GET', '/healthz', { 'x-request-id': 'has spaces; and {braces}' });
    expect(b.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });
});
