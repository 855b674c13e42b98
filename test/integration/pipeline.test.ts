import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createQueues, closeQueues, slotId } from '../../src/platform/queues.js';
import { createLogger } from '../../src/platform/logger.js';
import { openRedis } from '../../src/platform/redis.js';
import { startScheduler } from '../../workers/scheduler.js';
import { TEST_REDIS_URL } from '../support/env.js';

const log = createLogger('silent');

describe('queue pipeline on real Redis', function () {
  this.timeout(30_000);

  it('when three scheduler replicas start in the same minute, then the start-up job is enqueued once', async () => {
    const prefix = `t${randomBytes(4).toString('hex')}`;
    const connections = [
      new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null }),
      new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null }),
      new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null }),
    ];
    const replicas = connections.map((c) => createQueues(c, prefix));
    const schedule = [{ name: 'site-card', queue: 'documents' as const, cron: '0 0 1 1 *', runAtStart: true }];
    const minuteStart = Date.now();
    const schedulers = replicas.map((q) => startScheduler(q, schedule, log));
    await Promise.all(schedulers.map((s) => s.ready));
    const jobs = await replicas[0]!.documents.getJobs(['waiting', 'delayed', 'active', 'completed']);
    // A minute boundary between two replicas' starts would legitimately make two slots.
    const slots = new Set([slotId('site-card', new Date(minuteStart)), slotId('site-card', new Date())]);
    expect(jobs.length).to.be.at.most(slots.size).and.at.least(1);
    for (const job of jobs) expect(slots).to.include(job.id);
    await Promise.all(schedulers.map((s) => s.stop()));
    await replicas[0]!.documents.obliterate({ force: true });
    await Promise.all(replicas.map(closeQueues));
    for (const c of connections) c.disconnect();
  });

  it('when nothing answers on the default Redis port, then a redis-server is spawned, used and stopped', async () => {
    const handle = await openRedis(undefined, log, 'redis://127.0.0.1:1');
    expect(handle.origin).to.equal('spawned');
    const conn = handle.connection();
    await conn.set('k', 'v');
    expect(await conn.get('k')).to.equal('v');
    const port = Number(new URL(handle.url).port);
    await handle.close();
    const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => undefined);
    const reachable = await probe.connect().then(
      () => true,
      () => false,
    );
    probe.disconnect();
    expect(reachable, 'spawned redis-server still running after close').to.equal(false);
  });

  it('when REDIS_URL is set, then it is used as configured', async () => {
    const handle = await openRedis(TEST_REDIS_URL, log);
    expect(handle.origin).to.equal('configured');
    expect(await handle.connection().ping()).to.equal('PONG');
    await handle.close();
  });
});
