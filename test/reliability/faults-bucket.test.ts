import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent } from '../support/agents.js';
import { freePort } from '../../src/platform/net.js';
import { startS3rver } from '../../src/platform/object-store.js';

const BUCKET = 'market-public';

/**
 * The object store failing under the service: a bucket of the test's own (s3rver on a fixed port)
 * stopped while agents read and register, then started again on the same port and directory.
 */
describe('reliability: the object store goes down and comes back', function () {
  this.timeout(120_000);
  let svc: TestService;
  let dir: string;
  let port: number;
  let bucket: { endpoint: string; stop: () => Promise<void> } | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'market-bucket-fault-'));
    port = await freePort();
    bucket = await startS3rver(dir, BUCKET, port);
    svc = await startTestService({
      S3_ENDPOINT: bucket.endpoint,
      S3_BUCKET: BUCKET,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      SERVE_BUCKET: 'true',
    });
  });
  after(async () => {
    await svc?.stop();
    await bucket?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const timed = async (path: string) => {
    const started = performance.now();
    const res = await fetch(`${svc.url}${path}`);
    return {
      status: res.status,
      ms: performance.now() - started,
      retryAfter: res.headers.get('retry-after'),
      body: await res.text(),
    };
  };

  it('while the bucket is down, reads answer at once (from the API, or 503 with Retry-After), a new agent still registers, and its documents are published once the bucket is back', async () => {
    const first = await registerAgent(svc, 'bucket-first');
    await eventually(
      async () => (await fetch(`${svc.url}/api/agents/${first.handle}/score.json`)).status === 200,
      20_000,
    );

    await bucket!.stop();
    bucket = undefined;
    // Past the edge's one-second cache, every read below asks the (stopped) bucket.
    await eventually(async () => (await timed(`/api/agents/${first.handle}/score.json`)).status === 503, 5_000);

    const site = await timed('/.well-known/agent-card.json');
    const feed = await timed('/api/discovery/agents.json');
    const score = await timed(`/api/agents/${first.handle}/score.json`);
    const withQuery = await timed(`/api/agents/${first.handle}/health.json?fresh=1`);
    console.log(
      `      bucket down: site card ${site.status} in ${site.ms.toFixed(0)} ms, feed ${feed.status}, score ${score.status} in ${score.ms.toFixed(0)} ms`,
    );
    expect(site.status, 'the site card is rendered by the API when the bucket cannot serve it').to.equal(200);
    expect(feed.status).to.equal(200);
    for (const r of [score, withQuery]) {
      expect(r.status).to.equal(503);
      expect(JSON.parse(r.body).code).to.equal('dependency_unavailable');
      expect(Number(r.retryAfter)).to.be.greaterThan(0);
      expect(r.ms).to.be.below(3_000);
    }

    // Registration needs the database and the chain, not the bucket; its publish waits for the bucket.
    const second = await registerAgent(svc, 'bucket-second');
    expect(second.token).to.be.a('string');

    bucket = await startS3rver(dir, BUCKET, port);
    await eventually(
      async () => (await fetch(`${svc.url}/api/agents/${second.handle}/score.json`)).status === 200,
      60_000,
      250,
    );
    const doc = await (await fetch(`${svc.url}/api/agents/${second.handle}/score.json`)).json();
    expect(doc.subject.handle).to.equal(second.handle);
    expect((await timed(`/api/agents/${first.handle}/score.json`)).status).to.equal(200);
  });
});
