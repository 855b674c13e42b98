import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createQueues, closeQueues, slotId } from '../../src/platform/queues.js';
import { createLogger } from '../../src/platform/logger.js';
import { openRedis } from '../../src/platform/redis.js';
import { startScheduler } from '../../workers/scheduler.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { eventually } from '../support/service.js';

const log = createLogger('silent');

describe('queue pipeline on real Redis', function () {
  this.timeout(30_000);

  it('when a scheduler starts again within the same minute, and two replicas start together, then each start enqueues its start-up job', async () => {
    const prefix = `t${randomBytes(4).toString('hex')}`;
    const connections = [
      new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null }),
      new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null }),
    ];
    const replicas = connections.map((c) => createQueues(c, prefix));
    const schedule = [{ name: 'site-card', queue: 'documents' as const, cron: '0 0 1 1 *', runAtStart: true }];
    // Starts within one minute are what a per-minute job id merged: begin with time left in it.
    await eventually(async () => new Date().getUTCSeconds() < 50, 15_000, 100);
    const minute = slotId('site-card', new Date());
    const first = startScheduler(replicas[0]!, schedule, log);
    await first.ready;
    await first.stop();
    // The same process started again at once, and a second replica starting beside it.
    const again = [startScheduler(replicas[0]!, schedule, log), startScheduler(replicas[1]!, schedule, log)];
    await Promise.all(again.map((s) => s.ready));
    expect(slotId('site-card', new Date()), 'all three starts fell in one minute').to.equal(minute);
    const jobs = await replicas[0]!.documents.getJobs(['waiting', 'delayed', 'active', 'completed']);
    expect(jobs.map((j) => j.name)).to.deep.equal(['site-card', 'site-card', 'site-card']);
    expect(new Set(jobs.map((j) => j.id)).size, 'an id of its own for each start').to.equal(3);
    for (const job of jobs) expect(job.id).to.match(new RegExp(`^${minute}-start`));
    await Promise.all(again.map((s) => s.stop()));
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
