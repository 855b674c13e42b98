import { expect } from 'chai';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { flushFunnelCounters } from '../../src/domain/analytics/counter-flusher.js';
import { FunnelCounters } from '../../src/domain/analytics/funnel-counters.js';
import type { DB } from '../../src/data/schema.js';
import { createLogger } from '../../src/platform/logger.js';
import type { Queues } from '../../src/platform/queues.js';

const POST = '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6';

describe('a counter flush the database refuses', () => {
  it('keeps the counts for the next flush, and the flush lag keeps growing', async () => {
    // A database that refuses connections: nothing listens on port 1.
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 2000 });
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    let now = new Date('2026-11-28T12:00:00Z');
    const counters = new FunnelCounters(() => now);
    const before = counters.lastFlushAt;
    counters.count(POST, 'view', 'pages', 3);
    now = new Date('2026-11-28T12:00:05Z');
    try {
      let failed = false;
      await flushFunnelCounters({ db, queues: {} as Queues, counters, log: createLogger('silent') }).catch(() => {
        failed = true;
      });
      expect(failed).to.equal(true);
      expect(counters.lastFlushAt).to.equal(before);
      expect(counters.drain()).to.deep.equal([
        { postId: POST, day: '2026-11-28', kind: 'view', source: 'pages', count: 3 },
      ]);
    } finally {
      await db.destroy();
    }
  });
});
