import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createWalletClient, http, parseEventLogs, type Account } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import pg from 'pg';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { chainEnvOf, chainHandleOf } from '../support/topology.js';
import { testClient } from '../support/anvil.js';
import { startCountingRpcProxy, type CountingRpcProxy } from '../support/rpc-proxy.js';
import { RedisServer } from '../support/redis-server.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { identityRegistryAbi } from '../../src/platform/chain/identity-registry.js';
import { REGISTRATION_FETCH, REGISTRATION_TYPE, resolveIdentity } from '../../src/domain/identity/erc8004.js';
import { AGENT_DOCUMENT_NAMES, agentDocumentKey } from '../../src/domain/agents/agent-documents.js';

/** Crons that do not fire while the test runs: only what the test does moves the tables. */
const QUIET_SCHEDULE = { SITE_CARD_CRON: '0 0 1 1 *', POPULATION_CRON: '0 0 1 1 *', RECOMPUTE_CRON: '0 0 1 1 *' };

/**
 * Every row of every table, as (xmin, ctid): an insert, a delete and any update (even one that
 * writes the same values, or an upsert that changes nothing) moves it. Unlike pg_stat_user_tables,
 * which the server updates asynchronously, it is exact the moment a transaction commits.
 * projection_watermarks and bazaar_index_state are left out: the projections move their watermarks
 * five times a second whatever happens.
 */
async function tableFingerprint(pool: pg.Pool): Promise<Record<string, string>> {
  const { rows: tables } = await pool.query<{ name: string }>(
    "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('projection_watermarks', 'bazaar_index_state') ORDER BY tablename",
  );
  const out: Record<string, string> = {};
  for (const { name } of tables) {
    const { rows } = await pool.query<{ f: string }>(
      `SELECT count(*) || ':' || md5(coalesce(string_agg(xmin::text || '@' || ctid::text, ',' ORDER BY ctid), '')) AS f FROM "${name}"`,
    );
    out[name] = rows[0]!.f;
  }
  return out;
}

/** A TCP server that only counts connections: any fetch of a URL pointing at it shows here, TLS or not. */
async function connectionCounter(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server: TcpServer = createTcpServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A registration-file server the test owns: /ok serves `ok()`, /endless streams bytes until the
 * client hangs up, /declared-large announces a megabyte, /slow trickles a byte every 100 ms.
 */
async function registrationFiles(ok: () => unknown) {
  const sent = new Map<string, { bytes: number; closedAt?: number }>();
  const server: HttpServer = createHttpServer((req, res) => {
    const record = { bytes: 0 } as { bytes: number; closedAt?: number };
    sent.set(req.url ?? '', record);
    res.on('close', () => (record.closedAt = Date.now()));
    if (req.url === '/ok') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ok()));
    if (req.url === '/declared-large') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1024 * 1024) });
      record.bytes += 16;
      return res.write('{"padding":"xxxx');
    }
    if (req.url === '/endless') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) record.bytes += chunk.length;
      };
      res.on('drain', pump);
      return pump();
    }
    if (req.url === '/slow') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const tick = setInterval(() => {
        record.bytes++;
        res.write(' ');
      }, 100);
      return res.on('close', () => clearInterval(tick));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('a GET never writes, never calls the chain, never fetches a URL', function () {
  this.timeout(120_000);
  let devChain: DevChain;
  let rpc: CountingRpcProxy;
  let svc: TestService;
  let pool: pg.Pool;
  let reader: Agent;
  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);
  const documentsIdle = async () => {
    const counts = await svc.service.runtime.queues.documents.getJobCounts(
      'waiting',
      'active',
      'delayed',
      'prioritized',
    );
    const undispatched = await pool.query('SELECT 1 FROM domain_events WHERE dispatched_at IS NULL LIMIT 1');
    return Object.values(counts).every((n) => n === 0) && undispatched.rowCount === 0;
  };
  const allPublished = async (handle: string) => {
    const { rows } = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM published_documents WHERE key LIKE $1',
      [`api/agents/${handle}/%`],
    );
    return rows[0]!.n === AGENT_DOCUMENT_NAMES.length;
  };
  /** Registers a token in the IdentityRegistry from `account` and points it at `uri`. */
  const registerToken = async (account: Account, uri: (tokenId: bigint) => string) => {
    const wallet = createWalletClient({
      account,
      chain: localChain(devChain.chainId, devChain.rpcUrl),
      transport: http(devChain.rpcUrl),
    });
    const hash = await wallet.writeContract({
      address: devChain.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'register',
      args: ['data:application/json;base64,e30='],
    });
    const receipt = await devChain.publicClient.waitForTransactionReceipt({ hash });
    const [registered] = parseEventLogs({
      abi: identityRegistryAbi,
      logs: receipt.logs,
      eventName: 'Registered',
    }) as unknown as Array<{ args: { agentId: bigint } }>;
    const tokenId = registered!.args.agentId;
    const set = await wallet.writeContract({
      address: devChain.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'setAgentURI',
      args: [tokenId, uri(tokenId)],
    });
    await devChain.publicClient.waitForTransactionReceipt({ hash: set });
    return tokenId;
  };
  const conformantFile = (tokenId: bigint, name: string) =>
    `data:application/json;base64,${Buffer.from(
      JSON.stringify({
        type: REGISTRATION_TYPE,
        name,
        description: 'reads only',
        services: [{ name: 'A2A', endpoint: `https://example.test/${name}`, version: '0.3.0' }],
        active: true,
        registrations: [
          { agentId: Number(tokenId), agentRegistry: `eip155:${devChain.chainId}:${devChain.identityRegistry}` },
        ],
      }),
    ).toString('base64')}`;
  /** An agent with an ERC-8004 identity, every document published, and nothing left to do. */
  const settledAgentWithToken = async (handle: string, uri: (tokenId: bigint) => string) => {
    const agent = await registerAgent({ url: svc.url, chain: chainHandleOf(devChain) }, handle);
    await testClient(chainHandleOf(devChain)).setBalance({ address: agent.address, value: 10n ** 18n });
    const tokenId = await registerToken(agent.account, uri);
    expect(
      (await agent.api('/api/agents/me', { method: 'PATCH', json: { erc8004AgentId: tokenId.toString() } })).status,
    ).to.equal(200);
    await eventually(
      async () => {
        const { rows } = await pool.query(
          'SELECT 1 FROM agent_identities i JOIN agents a ON a.id = i.agent_id WHERE a.handle = $1 AND i.token_id = $2',
          [handle, tokenId.toString()],
        );
        return rows.length === 1 && (await allPublished(handle)) && (await documentsIdle());
      },
      30_000,
      100,
    );
    return { agent, tokenId };
  };
  /**
   * The tables once the background has nothing left to do: no job waiting, every event
   * dispatched, and no table moving between two looks (the feed indexer picks a change up only
   * once the server's oldest transaction has passed it, which another database's work can delay).
   */
  const quiet = async () => {
    let last = '';
    return eventually(
      async () => {
        if (!(await documentsIdle())) return undefined;
        const now = await tableFingerprint(pool);
        const same = JSON.stringify(now) === last;
        last = JSON.stringify(now);
        return same ? now : undefined;
      },
      30_000,
      300,
    );
  };
  /**
   * The identity cache is older than its 10 minutes: a render would read the chain again (and
   * write the cache), so a read that renders shows in the RPC counts and the tables.
   */
  const ageIdentityCache = () => pool.query("UPDATE agent_identities SET resolved_at = now() - interval '1 hour'");

  let counter: Awaited<ReturnType<typeof connectionCounter>>;

  before(async () => {
    devChain = await startDevChain();
    rpc = await startCountingRpcProxy(devChain.rpcUrl);
    counter = await connectionCounter();
    svc = await startTestService({ ...chainEnvOf(devChain), RPC_URL: rpc.url, ...QUIET_SCHEDULE });
    pool = new pg.Pool({ connectionString: svc.database.url, max: 4 });
    ({ agent: reader } = await settledAgentWithToken('safe-reader', (id) => conformantFile(id, 'safe-reader')));
    // The service's chain calls do pass through the proxy: the recompute resolved the token there.
    expect(rpc.callsTo(devChain.identityRegistry)).to.be.greaterThan(0);
  });
  after(async () => {
    await pool?.end();
    await svc?.stop();
    await rpc?.close();
    await counter?.close();
    await devChain?.stop();
  });

  it('24 concurrent score.json reads with distinct query strings all answer the published document, and no row changes', async () => {
    await ageIdentityCache();
    const before = await quiet();
    const chainCalls = rpc.callsTo(devChain.identityRegistry);
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, n) => get(`/api/agents/safe-reader/score.json?c=${n}`)),
    );
    const bodies = await Promise.all(answers.map(async (r) => Buffer.from(await r.arrayBuffer())));
    // Whatever a render wrote has committed by the time its answer was sent.
    const after = await tableFingerprint(pool);
    const changed = Object.keys(before).filter((t) => before[t] !== after[t]);
    expect(
      answers.map((r) => r.status),
      'every read answered 200',
    ).to.deep.equal(answers.map(() => 200));
    expect(changed, 'tables a read wrote to').to.deep.equal([]);
    expect(rpc.callsTo(devChain.identityRegistry) - chainCalls, 'chain calls the reads made').to.equal(0);
    const object = (await svc.service.runtime.store.get(agentDocumentKey(reader.handle, 'score.json')))!;
    for (const body of bodies) expect(body.equals(object.body), 'the published bytes').to.equal(true);
  });

  it('every per-agent document with a query string is the published object, byte for byte, with the headers the edge sends', async () => {
    const forms: Array<[string, string, string]> = [
      ...AGENT_DOCUMENT_NAMES.map((name): [string, string, string] => [
        name,
        `/api/agents/safe-reader/${name}`,
        `/api/agents/safe-reader/${name}?utm_source=x&c=1`,
      ]),
      ['badge.svg', '/api/agents/safe-reader/badge.svg', '/api/agents/safe-reader/badge.svg?kind=earnings&style=flat'],
      // Mixed case in the path is the same agent.
      ['score.json', '/api/agents/safe-reader/score.json', '/api/agents/Safe-Reader/score.json?c=2'],
    ];
    const headers = [
      'content-type',
      'cache-control',
      'etag',
      'last-modified',
      'access-control-allow-origin',
      'content-security-policy',
      'x-content-type-options',
    ];
    for (const [name, plain, queried] of forms) {
      const object = (await svc.service.runtime.store.get(
        agentDocumentKey('safe-reader', name as (typeof AGENT_DOCUMENT_NAMES)[number]),
      ))!;
      const fromEdge = await get(plain);
      const fromApi = await get(queried);
      expect(fromApi.status, queried).to.equal(200);
      const body = Buffer.from(await fromApi.arrayBuffer());
      expect(body.equals(object.body), `${queried}: the bucket's bytes`).to.equal(true);
      expect(Buffer.from(await fromEdge.arrayBuffer()).equals(body), `${plain}: the edge's bytes`).to.equal(true);
      for (const h of headers) expect(fromApi.headers.get(h), `${queried} ${h}`).to.equal(fromEdge.headers.get(h));
      expect(fromApi.headers.get('etag')).to.equal(object.etag);
      if (name === 'card') expect(fromApi.headers.get('content-security-policy')).to.contain('frame-ancestors *');
      const revalidated = await get(queried, { headers: { 'if-none-match': object.etag } });
      expect(revalidated.status, `${queried} revalidated`).to.equal(304);
    }
    // Other badge forms come from the figures published with the default one.
    const styled = await get('/api/agents/safe-reader/badge.svg?kind=verified&style=for-the-badge');
    expect(styled.status).to.equal(200);
    expect(styled.headers.get('content-type')).to.match(/^image\/svg\+xml/);
    expect(styled.headers.get('cache-control')).to.equal(
      (await svc.service.runtime.store.get(agentDocumentKey('safe-reader', 'badge.svg')))!.cacheControl,
    );
    expect((await styled.text()).toUpperCase())
      .to.contain('VERIFIED')
      .and.not.contain('UNVERIFIED');
  });

  it('before its first publication a document is 404 document_not_ready for every concurrent read, and the read queues one recompute', async () => {
    // An agent the pipeline has not heard of yet: no event, no documents.
    const wallet = `0x${randomBytes(20).toString('hex')}`;
    const { rows } = await pool.query<{ id: string }>(
      "INSERT INTO agents (handle, wallet_address) VALUES ('safe-unpublished', $1) RETURNING id",
      [wallet],
    );
    const id = rows[0]!.id;
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, n) => get(`/api/agents/safe-unpublished/score.json?c=${n}`)),
    );
    const problems = await Promise.all(
      answers.map(async (r) => ({
        status: r.status,
        type: r.headers.get('content-type'),
        cache: r.headers.get('cache-control'),
        retry: r.headers.get('retry-after'),
        body: await r.json(),
      })),
    );
    for (const p of problems) {
      if (p.status === 200) continue; // the recompute the first read queued can be this quick
      expect(p).to.deep.include({ status: 404, cache: 'no-store', retry: '2' });
      expect(p.type).to.contain('application/problem+json');
      expect(p.body).to.include({ code: 'document_not_ready', retryAfterSeconds: 2 });
    }
    expect(problems[0]!.status, 'the first read found nothing').to.equal(404);
    for (const path of [
      '/api/agents/safe-unpublished/badge.svg?kind=buyers',
      '/api/agents/safe-unpublished/card?x=1',
    ]) {
      const r = await get(path);
      expect([200, 404], path).to.include(r.status);
      if (r.status === 404) expect((await r.json()).code, path).to.equal('document_not_ready');
    }
    const published = await eventually(
      async () => {
        const r = await get('/api/agents/safe-unpublished/score.json?c=after');
        return r.status === 200 ? r.json() : undefined;
      },
      15_000,
      100,
    );
    expect(published.subject.handle).to.equal('safe-unpublished');
    const jobs = (
      await svc.service.runtime.queues.documents.getJobs(['completed', 'active', 'waiting', 'delayed'])
    ).filter((j) => j.data?.agentId === id);
    expect(jobs.length, 'one recompute for all those reads (two if a minute turned meanwhile)').to.be.within(1, 2);
    expect(jobs.every((j) => j.id!.startsWith(`agent-documents-${id}-read-`))).to.equal(true);
    // An unknown agent stays what it was.
    const unknown = await get('/api/agents/nobody-at-all/score.json?c=1');
    expect(unknown.status).to.equal(404);
    expect((await unknown.json()).code).to.equal('agent_not_found');
  });

  it('an object lost from the bucket while its bookkeeping row remains is written again after a read finds it missing', async () => {
    const key = agentDocumentKey(reader.handle, 'health.json');
    await svc.service.runtime.store.delete(key);
    const missing = await get(`/api/agents/${reader.handle}/health.json?lost=1`);
    expect(missing.status).to.equal(404);
    expect((await missing.json()).code).to.equal('document_not_ready');
    // A plain recompute would skip it as unchanged (its row still holds its hash): the read asks for a republish.
    await eventually(
      async () => (await get(`/api/agents/${reader.handle}/health.json?lost=2`)).status === 200,
      20_000,
      100,
    );
    expect(await svc.service.runtime.store.get(key)).to.not.equal(null);
  });

  it('a registration file on a loopback address is refused without a connection and recorded as a problem of the identity document', async () => {
    await settledAgentWithToken('safe-private', () => `https://127.0.0.1:${counter.port}/registration.json`);
    const object = (await svc.service.runtime.store.get(agentDocumentKey('safe-private', 'identity')))!;
    const identity = JSON.parse(object.body.toString());
    expect(identity.erc8004.registration).to.equal(null);
    expect(identity.erc8004.registrationErrors).to.have.length(1);
    expect(identity.erc8004.registrationErrors[0])
      .to.contain('registration file unreadable')
      .and.contain('(outbound_address_not_allowed)');
    expect(counter.connections(), 'the server was never contacted').to.equal(0);
    // An unreadable file is not a conformant registration.
    const bp = JSON.parse(
      (await svc.service.runtime.store.get(agentDocumentKey('safe-private', 'best-practices.json')))!.body.toString(),
    );
    expect(bp.items.find((i: { id: string }) => i.id === 'spec-conformant').status).to.equal('partial');
  });

  it('reads of every document and every badge form neither call the chain, nor fetch a registration file, nor write', async () => {
    await ageIdentityCache();
    const before = await quiet();
    const chainCalls = rpc.total();
    const identityCalls = rpc.callsTo(devChain.identityRegistry);
    const paths: string[] = [];
    for (const handle of ['safe-reader', 'safe-private', 'safe-unpublished']) {
      for (const name of AGENT_DOCUMENT_NAMES)
        paths.push(
          `/api/agents/${handle}/${name}`,
          `/api/agents/${handle}/${name}?nocache=${randomBytes(4).toString('hex')}`,
        );
      for (const kind of ['earnings', 'buyers', 'skills', 'verified'])
        for (const style of ['flat', 'for-the-badge'])
          paths.push(`/api/agents/${handle}/badge.svg?kind=${kind}&style=${style}`);
    }
    paths.push(
      '/api/agents/nobody-at-all/identity?x=1',
      '/.well-known/agent-card.json?x=1',
      '/spec/market-score-v1.json?x=1',
      '/api/discovery/agents.json?limit=5',
      '/api/discovery/trending.json?x=1',
      '/api/discovery/categories.json?depth=3',
      '/api/discovery/tags?x=1',
      '/api/discovery/search?q=reads',
      '/api/agents/me',
    );
    const answers = await Promise.all(paths.map((p) => get(p)));
    for (const [i, r] of answers.entries()) expect(r.status, paths[i]).to.be.oneOf([200, 401, 404]);
    expect(answers.filter((r) => r.status === 200).length).to.be.greaterThan(paths.length - 4);
    const after = await tableFingerprint(pool);
    expect(
      Object.keys(before).filter((t) => before[t] !== after[t]),
      'tables a read wrote to',
    ).to.deep.equal([]);
    expect(rpc.callsTo(devChain.identityRegistry) - identityCalls, 'IdentityRegistry calls').to.equal(0);
    expect(rpc.total() - chainCalls, 'chain calls of any kind').to.equal(0);
    expect(counter.connections(), 'registration file fetches').to.equal(0);
  });

  it('names and addresses that lead into this machine or its network are refused before any connection; other schemes are not fetched', async () => {
    const deployer = privateKeyToAccount(devChain.accounts.deployer.privateKey);
    const uris = [
      `https://localhost:${counter.port}/registration.json`,
      `https://[::1]:${counter.port}/registration.json`,
      `https://[::ffff:127.0.0.1]:${counter.port}/registration.json`,
      `https://2130706433:${counter.port}/registration.json`,
      'https://169.254.169.254/latest/meta-data/',
      'https://10.0.0.1/registration.json',
    ];
    for (const uri of uris) {
      const tokenId = await registerToken(deployer, () => uri);
      const r = await resolveIdentity(
        devChain.publicClient,
        devChain.identityRegistry,
        devChain.chainId,
        tokenId.toString(),
      );
      expect(r.registrationErrors, uri).to.have.length(1);
      expect(r.registrationErrors[0], uri).to.contain('(outbound_address_not_allowed)');
    }
    const plain = await registerToken(deployer, () => `http://127.0.0.1:${counter.port}/registration.json`);
    const r = await resolveIdentity(
      devChain.publicClient,
      devChain.identityRegistry,
      devChain.chainId,
      plain.toString(),
    );
    expect(r.registrationErrors[0]).to.contain('is not fetched (use data: or https:)');
    expect(counter.connections(), 'no connection was made').to.equal(0);
  });

  it('an endless, oversize or slow registration file is cut off at 64 KiB and 3 s', async () => {
    const deployer = privateKeyToAccount(devChain.accounts.deployer.privateKey);
    let okToken = 0n;
    const files = await registrationFiles(() => ({
      type: REGISTRATION_TYPE,
      name: 'served',
      description: 'from a server of the test',
      services: [],
      active: true,
      registrations: [
        { agentId: Number(okToken), agentRegistry: `eip155:${devChain.chainId}:${devChain.identityRegistry}` },
      ],
    }));
    try {
      // The test's own server is on loopback: allowed here, and over http, by the caller's explicit policy.
      const ownServer = { ...REGISTRATION_FETCH, protocols: ['https:', 'http:'], allowPrivateAddresses: true };
      const resolve = async (path: string) => {
        const tokenId = await registerToken(deployer, () => `${files.url}${path}`);
        if (path === '/ok') okToken = tokenId;
        const started = Date.now();
        const r = await resolveIdentity(
          devChain.publicClient,
          devChain.identityRegistry,
          devChain.chainId,
          tokenId.toString(),
          ownServer,
        );
        return { r, ms: Date.now() - started };
      };
      const ok = await resolve('/ok');
      expect(ok.r.registrationErrors, 'a file within the limits is read').to.deep.equal([]);
      expect(ok.r.registration).to.include({ name: 'served' });

      const endless = await resolve('/endless');
      expect(endless.r.registrationErrors[0]).to.contain('(outbound_too_large)');
      expect(endless.ms).to.be.lessThan(2000);
      const sent = await eventually(
        async () => {
          const record = files.sent.get('/endless');
          return record?.closedAt ? record : undefined;
        },
        5000,
        20,
      );
      // What the server got into the socket before the client hung up: the 64 KiB read and what
      // the kernel buffers held, nowhere near an endless stream.
      expect(sent.bytes).to.be.lessThan(16 * 1024 * 1024);

      const declared = await resolve('/declared-large');
      expect(declared.r.registrationErrors[0]).to.contain('(outbound_too_large)');
      expect(declared.ms).to.be.lessThan(2000);

      const slow = await resolve('/slow');
      expect(slow.r.registrationErrors[0]).to.contain('(outbound_timeout)');
      expect(slow.ms).to.be.within(REGISTRATION_FETCH.timeoutMs - 50, REGISTRATION_FETCH.timeoutMs + 1500);
      await eventually(async () => files.sent.get('/slow')?.closedAt, 5000, 20);
    } finally {
      await files.close();
    }
  });
});

describe('a read of a document not published yet, while Redis does not answer', function () {
  this.timeout(60_000);
  let devChain: DevChain;
  let redis: RedisServer;
  let svc: TestService;

  before(async () => {
    // A Redis of this test's own, so it can be frozen (SIGSTOP: connections stay open, nothing answers).
    redis = await RedisServer.start();
    devChain = await startDevChain();
    svc = await startTestService({ ...chainEnvOf(devChain), REDIS_URL: redis.url, ...QUIET_SCHEDULE });
  });
  after(async () => {
    // Workers wait for Redis to close, so it must answer when the service stops.
    redis?.thaw();
    await svc?.stop();
    await redis?.stop();
    await devChain?.stop();
  });

  it('is answered 404 document_not_ready at once, and the document comes once Redis is back', async () => {
    const pool = new pg.Pool({ connectionString: svc.database.url, max: 1 });
    try {
      await pool.query("INSERT INTO agents (handle, wallet_address) VALUES ('frozen-queue', $1)", [
        `0x${randomBytes(20).toString('hex')}`,
      ]);
    } finally {
      await pool.end();
    }
    redis.freeze();
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, n) => fetch(`${svc.url}/api/agents/frozen-queue/score.json?c=${n}`)),
    );
    const elapsed = Date.now() - started;
    for (const r of answers) {
      expect(r.status).to.equal(404);
      expect((await r.json()).code).to.equal('document_not_ready');
    }
    expect(elapsed, 'answered without waiting for Redis').to.be.lessThan(2500);
    redis.thaw();
    const published = await eventually(
      async () => {
        const r = await fetch(`${svc.url}/api/agents/frozen-queue/score.json?c=later`);
        return r.status === 200 ? r.json() : undefined;
      },
      20_000,
      200,
    );
    expect(published.subject.handle).to.equal('frozen-queue');
  });
});
