import { expect } from 'chai';
import http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import { startTestService, eventually, type TestService } from '../support/service.js';
import net from 'node:net';
import { freePort } from '../../src/platform/net.js';

const challenge = (url: string, i: number) =>
  fetch(`${url}/api/agents/challenge`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: `0x${i.toString(16).padStart(40, '1')}`, handle: `limit-agent-${i}` }),
  });

/** A Redis of the test's own, so stopping it touches nobody else. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const answers = () =>
    new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => (socket.end(), resolve(true)));
      socket.on('error', () => resolve(false));
    });
  await eventually(answers, 5000);
  return child;
}

describe('reliability: load protection', function () {
  this.timeout(60_000);

  describe('one bucket fetch for a burst of identical reads, security headers on every answer', () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService();
      await eventually(async () => (await fetch(`${svc.url}/.well-known/agent-card.json`)).headers.get('etag'));
    });
    after(async () => svc?.stop());

    it('1,000 concurrent reads of one static document share one bucket fetch', async () => {
      const store = svc.service.runtime.store;
      const original = store.get.bind(store);
      const fetched: string[] = [];
      store.get = async (key: string) => {
        fetched.push(key);
        return original(key);
      };
      try {
        // Past the edge's 1 s cache, so the burst finds nothing fresh.
        await new Promise((r) => setTimeout(r, 1100));
        const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
        const url = new URL(svc.url);
        const burstStarted = performance.now();
        const statuses = await Promise.all(
          Array.from(
            { length: 1000 },
            () =>
              new Promise<number>((resolve, reject) => {
                http
                  .get({ host: url.hostname, port: url.port, path: '/.well-known/agent-card.json', agent }, (res) => {
                    res.resume();
                    res.on('end', () => resolve(res.statusCode ?? 0));
                  })
                  .on('error', reject);
              }),
          ),
        );
        const burstMs = performance.now() - burstStarted;
        agent.destroy();
        expect(statuses.every((s) => s === 200)).to.equal(true);
        // One fetch per edge TTL (1 s) at most, however many readers wait: not one per reader.
        expect(fetched.filter((k) => k === '.well-known/agent-card.json').length).to.be.within(1, Math.ceil(burstMs / 1000) + 1);
      } finally {
        store.get = original;
      }
    });

    it('JSON, HTML and SVG answers carry the security headers; the embed card may be framed, nothing else', async () => {
      for (const path of ['/.well-known/agent-card.json', '/api/discovery/search?q=skill', '/no/such/path', '/openapi.json']) {
        const res = await fetch(`${svc.url}${path}`);
        expect(res.headers.get('x-content-type-options'), path).to.equal('nosniff');
        expect(res.headers.get('strict-transport-security'), path).to.match(/max-age=/);
        expect(res.headers.get('referrer-policy'), path).to.equal('no-referrer');
        expect(res.headers.get('content-security-policy'), path).to.include("frame-ancestors 'none'");
        expect(res.headers.get('cross-origin-resource-policy'), path).to.equal('cross-origin');
        expect(res.headers.get('access-control-allow-origin'), path).to.equal('*');
      }
    });
  });

  describe('per-client rate limits, shared through Redis and degrading to per-process limits without it', () => {
    let svc: TestService;
    let redis: ChildProcess | undefined;
    let redisPort: number;
    before(async () => {
      redisPort = await freePort();
      redis = await startRedis(redisPort);
      svc = await startTestService({ REDIS_URL: `redis://127.0.0.1:${redisPort}`, RATE_LIMITS: 'challenge=5,search=4' });
    });
    after(async () => {
      await svc?.stop();
      redis?.kill('SIGKILL');
    });

    it('beyond the limit a client gets 429 rate_limited with Retry-After, and other routes are not counted', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await challenge(svc.url, i)).status);
      expect(statuses.slice(0, 5).every((s) => s !== 429), String(statuses)).to.equal(true);
      const refused = await challenge(svc.url, 99);
      expect(refused.status).to.equal(429);
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
      const problem = await refused.json();
      expect(problem.code).to.equal('rate_limited');
      expect(refused.headers.get('content-type')).to.match(/problem\+json/);
      expect((await fetch(`${svc.url}/api/discovery/agents.json`)).status).to.equal(200);
    });

    it('with Redis down, limits still hold per process and answers stay fast', async () => {
      redis!.kill('SIGKILL');
      await eventually(async () => (await (await fetch(`${svc.url}/readyz`)).json()).checks.redis.status === 'failed', 10_000);
      const times: number[] = [];
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const started = performance.now();
        statuses.push((await fetch(`${svc.url}/api/discovery/search?q=skill${i}`)).status);
        times.push(performance.now() - started);
      }
      expect(statuses.slice(0, 4).every((s) => s !== 429)).to.equal(true);
      expect(statuses.slice(4)).to.deep.equal([429, 429]);
      expect(Math.max(...times)).to.be.below(1500);
    });
  });
});
