import { expect } from 'chai';
import http from 'node:http';
import { startTestService, eventually, type TestService } from '../support/service.js';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { edge } from '../../src/api/middleware/edge.js';
import { createLogger } from '../../src/platform/logger.js';
import type { ObjectStore } from '../../src/platform/object-store.js';
import { registerAgent } from '../support/agents.js';
import { RedisServer } from '../support/redis-server.js';
import { QUEUE_NAMES } from '../../src/platform/queues.js';

/**
 * fetch with the body read to the end, for tests that look only at the status and headers: an
 * unread body leaves its pooled connection paused, so it never sees the service close it and keeps
 * this process alive after the last test.
 */
const fetchRead = async (url: string, init?: RequestInit) => {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return res;
};

const challenge = (url: string, i: number) =>
  fetch(`${url}/api/agents/challenge`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: `0x${i.toString(16).padStart(40, '1')}`, handle: `limit-agent-${i}` }),
  });

describe('reliability: load protection', function () {
  this.timeout(60_000);

  describe('one bucket fetch for a burst of identical reads, security headers on every answer', () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService();
      // The bucket object itself: the API answers this path (with an ETag) before it is published too.
      await eventually(async () => svc.service.runtime.store.get('.well-known/agent-card.json'), 20_000);
    });
    after(async () => svc?.stop());

    it('1,000 concurrent reads of one static document share one bucket fetch, and one more once the edge cache expires', async () => {
      const real = svc.service.runtime.store;
      const fetched: string[] = [];
      const counting: ObjectStore = {
        ...real,
        get: async (key: string) => {
          fetched.push(key);
          return real.get(key);
        },
      };
      let clock = 1_000_000;
      const app = express();
      app.use(edge({ store: counting, log: createLogger('silent'), ttlMs: 1000, now: () => clock }));
      const server = app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      const port = (server.address() as AddressInfo).port;
      const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
      const burst = (n: number) =>
        Promise.all(
          Array.from(
            { length: n },
            () =>
              new Promise<number>((resolve, reject) => {
                http
                  .get({ host: '127.0.0.1', port, path: '/.well-known/agent-card.json', agent }, (res) => {
                    res.resume();
                    res.on('end', () => resolve(res.statusCode ?? 0));
                  })
                  .on('error', reject);
              }),
          ),
        );
      try {
        const first = await burst(1000);
        expect(first.every((s) => s === 200)).to.equal(true);
        expect(fetched).to.deep.equal(['.well-known/agent-card.json']);
        clock += 1001;
        const second = await burst(100);
        expect(second.every((s) => s === 200)).to.equal(true);
        expect(fetched).to.have.length(2);
      } finally {
        agent.destroy();
        await new Promise((r) => server.close(r));
      }
    });

    it('JSON, HTML and SVG answers carry the security headers; only the embed card may be framed', async () => {
      const agent = await registerAgent(svc, 'headers-agent');
      await eventually(
        async () => (await fetchRead(`${svc.url}/api/agents/${agent.handle}/card`)).status === 200,
        20_000,
      );
      const paths = [
        '/.well-known/agent-card.json',
        '/api/discovery/search?q=skill',
        '/no/such/path',
        '/openapi.json',
        `/api/agents/${agent.handle}/badge.svg`,
        `/api/agents/${agent.handle}/badge.svg?kind=buyers`,
      ];
      for (const path of paths) {
        const res = await fetchRead(`${svc.url}${path}`);
        expect(res.headers.get('x-content-type-options'), path).to.equal('nosniff');
        expect(res.headers.get('strict-transport-security'), path).to.match(/max-age=/);
        expect(res.headers.get('referrer-policy'), path).to.equal('no-referrer');
        expect(res.headers.get('content-security-policy'), path).to.include("frame-ancestors 'none'");
        expect(res.headers.get('cross-origin-resource-policy'), path).to.equal('cross-origin');
        expect(res.headers.get('access-control-allow-origin'), path).to.equal('*');
      }
      for (const path of [`/api/agents/${agent.handle}/card`, `/api/agents/${agent.handle}/card?theme=x`]) {
        const card = await fetchRead(`${svc.url}${path}`);
        expect(card.headers.get('content-type'), path).to.match(/^text\/html/);
        expect(card.headers.get('content-security-policy'), path).to.include('frame-ancestors *');
        expect(card.headers.get('x-content-type-options'), path).to.equal('nosniff');
      }
      const dashboard = await fetchRead(`${svc.url}/admin/queues`, {
        headers: { authorization: `Bearer ${svc.adminToken}` },
      });
      expect(dashboard.status).to.equal(200);
      expect(dashboard.headers.get('x-frame-options')).to.equal('DENY');
      expect(dashboard.headers.get('x-content-type-options')).to.equal('nosniff');
    });
  });

  describe('per-client rate limits, shared through Redis and degrading to per-process limits without it', () => {
    let svc: TestService;
    // A Redis of the test's own, so stopping it touches nobody else.
    let redis: RedisServer | undefined;
    before(async () => {
      redis = await RedisServer.start();
      svc = await startTestService({ REDIS_URL: redis.url, RATE_LIMITS: 'challenge=5,search=4' });
    });
    after(async () => {
      // Workers wait for Redis to close, so it must be there, answering, and their connections back
      // when the service stops: a worker closed while it reconnects never finishes closing, and its
      // timers keep this process alive.
      if (svc && redis && !redis.running) {
        await redis.restart();
        const { queues } = svc.service.runtime;
        await eventually(
          async () => (await Promise.all(QUEUE_NAMES.map((q) => queues[q].getWorkersCount()))).every((n) => n > 0),
          20_000,
          50,
        );
      }
      await svc?.stop();
      await redis?.kill();
    });

    it('beyond the limit a client gets 429 rate_limited with Retry-After, and other routes are not counted', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await challenge(svc.url, i)).status);
      expect(
        statuses.slice(0, 5).every((s) => s !== 429),
        String(statuses),
      ).to.equal(true);
      const refused = await challenge(svc.url, 99);
      expect(refused.status).to.equal(429);
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
      const problem = await refused.json();
      expect(problem.code).to.equal('rate_limited');
      expect(refused.headers.get('content-type')).to.match(/problem\+json/);
      expect((await fetch(`${svc.url}/api/discovery/agents.json`)).status).to.equal(200);
      // No proxy is trusted by default (TRUST_PROXY): a client cannot pick the address it is counted by.
      const spoofed = await fetch(`${svc.url}/api/agents/challenge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.23' },
        body: JSON.stringify({ address: `0x${'2'.repeat(40)}`, handle: 'limit-agent-spoof' }),
      });
      expect(spoofed.status).to.equal(429);
    });

    it('with Redis down, limits still hold per process and answers stay fast', async () => {
      await redis!.kill();
      await eventually(
        async () => (await (await fetch(`${svc.url}/readyz`)).json()).checks.redis.status === 'failed',
        10_000,
      );
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
