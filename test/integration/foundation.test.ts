import { expect } from 'chai';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { schemaErrors, SCHEMAS } from '../../src/documents/validate.js';
import { siteCardJob } from '../../jobs/site-card.job.js';
import { jobContext } from '../../src/bootstrap/service.js';

describe('foundation: the service on real PostgreSQL, Redis, s3rver and anvil', function () {
  this.timeout(60_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc?.stop();
  });

  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);

  it('publishes the site AgentCard through scheduler, worker and bucket, and the edge serves it with caching headers', async () => {
    const row = await eventually(() =>
      svc.service.runtime.database.db
        .selectFrom('published_documents')
        .selectAll()
        .where('key', '=', '.well-known/agent-card.json')
        .executeTakeFirst(),
    );
    expect(row.content_type).to.match(/^application\/json/);
    const res = await get('/.well-known/agent-card.json');
    expect(res.status).to.equal(200);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.headers.get('cache-control')).to.match(/max-age=\d+, stale-while-revalidate=\d+/);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.headers.get('etag')).to.match(/^"[^"]+"$/);
    const card = await res.json();
    expect(schemaErrors(SCHEMAS.agentCard, card)).to.deep.equal([]);
    expect(card.url).to.equal(svc.config.publicBaseUrl ?? `http://localhost:${svc.config.port}`);
    // The object in the bucket is exactly what the edge served.
    const object = await svc.service.runtime.store.get('.well-known/agent-card.json');
    expect(JSON.parse(object!.body.toString())).to.deep.equal(card);
  });

  it('the embedded bucket replaces an object whole: PUTs of one key at once never mix, and a GET gets one version', async () => {
    const { store } = svc.service.runtime;
    // Versions of different lengths, as two renders of one document can be.
    const versions = Array.from({ length: 6 }, (_, i) =>
      Buffer.from(JSON.stringify({ v: i, pad: 'x'.repeat(20_000 - i * 3_000) })),
    );
    const kind = { contentType: 'application/json', cacheControl: 'public, max-age=5' };
    for (let round = 0; round < 10; round++) {
      const reads: Array<Promise<unknown>> = [];
      const writes = versions.map((body, i) => {
        if (i % 2) reads.push(store.get('test/race.json'));
        return store.put('test/race.json', body, kind);
      });
      await Promise.all(writes);
      for (const read of await Promise.all(reads)) {
        if (read)
          expect(
            versions.some((v) => v.equals((read as { body: Buffer }).body)),
            'a read during the writes',
          ).to.equal(true);
      }
      const after = await store.get('test/race.json');
      expect(
        versions.some((v) => v.equals(after!.body)),
        `round ${round}: the object after the writes`,
      ).to.equal(true);
      expect(JSON.parse(after!.body.toString())).to.have.property('v');
    }
  });

  it('answers a conditional request with 304 and no body', async () => {
    const first = await get('/.well-known/agent-card.json');
    const etag = first.headers.get('etag')!;
    const second = await get('/.well-known/agent-card.json', { headers: { 'If-None-Match': etag } });
    expect(second.status).to.equal(304);
    expect(await second.text()).to.equal('');
    expect(second.headers.get('etag')).to.equal(etag);
  });

  it('when the card is rendered again unchanged, then publishing skips the bucket write', async () => {
    const { db } = svc.service.runtime.database;
    const before = await db
      .selectFrom('published_documents')
      .select(['publish_count', 'sha256'])
      .where('key', '=', '.well-known/agent-card.json')
      .executeTakeFirstOrThrow();
    const result = await siteCardJob.run(jobContext(svc.service.runtime), {});
    expect(result).to.deep.equal({ card: 'unchanged', crawlSpec: 'unchanged' });
    const after = await db
      .selectFrom('published_documents')
      .select(['publish_count', 'sha256'])
      .where('key', '=', '.well-known/agent-card.json')
      .executeTakeFirstOrThrow();
    expect(after).to.deep.equal(before);
  });

  it('when the site changes, then the card is re-published with new bytes and a new ETag', async () => {
    const rt = svc.service.runtime;
    const oldTag = (await get('/.well-known/agent-card.json')).headers.get('etag');
    const result = await siteCardJob.run(
      { ...jobContext(rt), site: { ...rt.site, baseUrl: 'https://moved.example' } },
      {},
    );
    expect(result).to.include({ card: 'published' });
    const object = await rt.store.get('.well-known/agent-card.json');
    expect(JSON.parse(object!.body.toString()).url).to.equal('https://moved.example');
    expect(object!.etag).to.not.equal(oldTag);
    // Put the original back for the other tests.
    await siteCardJob.run(jobContext(rt), {});
  });

  it('is alive and ready, with every dependency checked', async () => {
    expect((await get('/healthz')).status).to.equal(200);
    const ready = await (await get('/readyz')).json();
    expect(ready.status).to.equal('ready');
    expect(Object.keys(ready.checks)).to.have.members(['database', 'redis', 'bucket', 'chain']);
  });

  describe('errors are RFC 9457 problem+json', () => {
    const expectProblem = async (res: Response, status: number, code: string) => {
      expect(res.status).to.equal(status);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const body = await res.json();
      expect(body).to.include({ status, code, type: `/problems/${code}` });
      expect(body.title).to.be.a('string');
      return body;
    };

    it('an unknown path is a 404 problem', async () => {
      await expectProblem(await get('/no/such/thing'), 404, 'route_not_found');
    });

    it('malformed JSON is a 400 problem', async () => {
      const res = await get('/dev/faucet', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"address":',
      });
      await expectProblem(res, 400, 'malformed_json');
    });

    it('an oversize body is a 413 problem', async () => {
      const big = JSON.stringify({ address: `0x${'a'.repeat(40)}`, pad: 'x'.repeat(300 * 1024) });
      const res = await get('/dev/faucet', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: big,
      });
      await expectProblem(res, 413, 'payload_too_large');
    });

    it('invalid input is a 400 problem that names each bad parameter', async () => {
      const res = await get('/dev/faucet', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ address: 'nope', amount: '1.5', extra: 1 }),
      });
      const body = await expectProblem(res, 400, 'invalid_request');
      const names = body.invalidParams.map((p: { name: string }) => p.name);
      expect(names).to.include.members(['address', 'amount']);
    });
  });

  describe('dev faucet', () => {
    it('mints test USDC on the embedded chain to any address, with test ETH for gas', async () => {
      const address = '0x1111111111111111111111111111111111111111';
      const res = await get('/dev/faucet', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ address, amount: '2500000' }),
      });
      expect(res.status).to.equal(200);
      const body = await res.json();
      expect(body.txHash).to.match(/^0x[0-9a-f]{64}$/);
      const { chain } = svc.service.runtime;
      // It names its chain, so a client can mint an ERC-8004 identity there (skill-market register --erc8004).
      expect(body).to.include({
        chainId: chain.chainId,
        rpcUrl: chain.rpcUrl,
        identityRegistry: chain.identityRegistry,
      });
      const balance = await chain.publicClient.readContract({
        address: chain.usdc.address,
        abi: [
          {
            type: 'function',
            name: 'balanceOf',
            stateMutability: 'view',
            inputs: [{ type: 'address' }],
            outputs: [{ type: 'uint256' }],
          },
        ],
        functionName: 'balanceOf',
        args: [address],
      });
      expect(balance).to.equal(2_500_000n);
      // And gas for an ERC-8004 registration, topped up, never taken away.
      expect(await chain.publicClient.getBalance({ address })).to.equal(10n ** 16n);
      await get('/dev/faucet', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ address, amount: '1' }),
      });
      expect(await chain.publicClient.getBalance({ address })).to.equal(10n ** 16n);
    });
  });

  describe('operators', () => {
    it('the queue dashboard needs the admin token', async () => {
      const denied = await get('/admin/queues');
      expect(denied.status).to.equal(401);
      expect(denied.headers.get('www-authenticate')).to.match(/^Basic/);
      const allowed = await get('/admin/queues', { headers: { authorization: `Bearer ${svc.adminToken}` } });
      expect(allowed.status).to.equal(200);
      expect(await allowed.text()).to.match(/<html/i);
      const basic = Buffer.from(`ops:${svc.adminToken}`).toString('base64');
      const api = await get('/admin/queues/api/queues', { headers: { authorization: `Basic ${basic}` } });
      expect(api.status).to.equal(200);
      const queues = (await api.json()).queues.map((q: { name: string }) => q.name);
      expect(queues).to.include('documents');
    });

    it('Prometheus metrics show request latency, queue depth and job durations', async () => {
      expect((await get('/metrics')).status).to.equal(401);
      const text = await (await get('/metrics', { headers: { authorization: `Bearer ${svc.adminToken}` } })).text();
      expect(text).to.match(/http_request_duration_seconds_bucket\{.*route="\/healthz"/);
      expect(text).to.match(/queue_jobs\{queue="documents",state="completed"\} \d+/);
      expect(text).to.match(
        /job_duration_seconds_count\{queue="documents",name="site-card",outcome="completed"\} [1-9]/,
      );
      // What the runbook watches: nothing in flight, feeds caught up.
      expect(text).to.match(/^payments_in_flight\{status="settling"\} 0$/m);
      expect(text).to.match(/^payments_oldest_in_flight_seconds\{status="pending"\} 0$/m);
      expect(text).to.match(/^feed_lag_seconds\{feed="post"\} 0$/m);
    });
  });

  it('every pooled database connection runs without JIT (decision 0005)', async () => {
    const { pool } = svc.service.runtime.database;
    // Several connections at once, so more than the first one is checked.
    const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    try {
      for (const c of clients) expect((await c.query<{ jit: string }>('SHOW jit')).rows[0]!.jit).to.equal('off');
    } finally {
      for (const c of clients) c.release();
    }
  });

  it('answers CORS preflights for every origin', async () => {
    const res = await get('/dev/faucet', {
      method: 'OPTIONS',
      headers: { origin: 'https://agent.example', 'access-control-request-method': 'POST' },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.headers.get('access-control-allow-headers')).to.contain('X-PAYMENT');
  });
});
