import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Pool } from 'pg';
import type { Queues } from './queues.js';

/**
 * How long a scrape waits for the queue counts from Redis. Past it (Redis down or partitioned)
 * the scrape answers with the last counts read and marks them stale, so /metrics stays quick.
 */
export const QUEUE_READ_TIMEOUT_MS = 500;
const JOB_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized'] as const;

/** Prometheus metrics of one process. Queue depth is read from Redis at scrape time. */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly jobDuration = new Histogram({
    name: 'job_duration_seconds',
    help: 'Job run time by queue, job name and outcome',
    labelNames: ['queue', 'name', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly jobFailures = new Counter({
    name: 'job_failures_total',
    help: 'Failed job attempts by queue and job name',
    labelNames: ['queue', 'name'] as const,
    registers: [this.registry],
  });

  readonly documentsPublished = new Counter({
    name: 'documents_published_total',
    help: 'Document publish attempts by outcome (published or unchanged)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly searchesShed = new Counter({
    name: 'searches_shed_total',
    help: 'Searches answered 503 search_busy: the queue was full (queue_full) or the wait ran out (waited_too_long)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /** Queue depth from Redis and the operator's questions about PostgreSQL, read at scrape time. */
  constructor(queues?: Queues, pool?: Pool) {
    collectDefaultMetrics({ register: this.registry });
    if (pool) {
      // One query per scrape feeds both payment gauges (the partial index on unsettled rows).
      let inFlight: Promise<{ status: string; n: number; oldest: number }[]> | undefined;
      const readInFlight = () =>
        (inFlight ??= pool
          .query<{ status: string; n: number; oldest: number }>(
            `SELECT status, count(*)::int AS n, extract(epoch FROM now() - min(updated_at))::float AS oldest
             FROM payments WHERE status IN ('pending', 'verified', 'settling') GROUP BY status`,
          )
          .then((r) => r.rows)
          .finally(() => setTimeout(() => (inFlight = undefined), 100)));
      const IN_FLIGHT = ['pending', 'verified', 'settling'];
      new Gauge({
        name: 'payments_in_flight',
        help: 'Payments not yet final, by status (a settling payment waits for its transaction)',
        labelNames: ['status'] as const,
        registers: [this.registry],
        async collect() {
          const rows = await readInFlight();
          for (const status of IN_FLIGHT) this.set({ status }, rows.find((r) => r.status === status)?.n ?? 0);
        },
      });
      new Gauge({
        name: 'payments_oldest_in_flight_seconds',
        help: 'Seconds since the oldest payment in each non-final status last changed (0 when none); see the stuck-payment runbook',
        labelNames: ['status'] as const,
        registers: [this.registry],
        async collect() {
          const rows = await readInFlight();
          for (const status of IN_FLIGHT) this.set({ status }, rows.find((r) => r.status === status)?.oldest ?? 0);
        },
      });
      new Gauge({
        name: 'feed_lag_seconds',
        help: 'Age of the oldest committed change not yet in the delta feed (0 when caught up), by feed',
        labelNames: ['feed'] as const,
        registers: [this.registry],
        async collect() {
          const { rows } = await pool.query<{ feed: string; lag: number | null }>(
            `SELECT k.feed, (SELECT extract(epoch FROM now() - min(t.updated_at))::float
                             FROM (SELECT updated_at, change_txid FROM agents WHERE k.feed = 'agent'
                                   UNION ALL SELECT updated_at, change_txid FROM posts WHERE k.feed = 'post') t
                             WHERE t.change_txid >= coalesce((SELECT watermark FROM feed_watermarks w WHERE w.kind = k.feed), '0'::xid8)) AS lag
             FROM (VALUES ('agent'), ('post')) k(feed)`,
          );
          for (const r of rows) this.set({ feed: r.feed }, Math.max(0, r.lag ?? 0));
        },
      });
    }
    if (queues) {
      const queueList = Object.values(queues);
      // At most one read of Redis at a time: while one hangs, later scrapes wait for it (bounded),
      // never pile up reads of their own.
      type Counts = Array<[queue: string, counts: Record<string, number>]>;
      let reading: Promise<Counts> | undefined;
      const readCounts = () =>
        (reading ??= Promise.all(
          queueList.map(async (q): Promise<Counts[number]> => [q.name, await q.getJobCounts(...JOB_STATES)]),
        ).finally(() => (reading = undefined)));
      const state: { counts: Counts | undefined; readAt: number; stale: boolean } = { counts: undefined, readAt: 0, stale: true };
      // The three gauges of one scrape share one read: prom-client starts their collects together.
      let refreshing: Promise<void> | undefined;
      const refresh = () =>
        (refreshing ??= (async () => {
          let timer: NodeJS.Timeout | undefined;
          const counts = await Promise.race([
            readCounts(),
            new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), QUEUE_READ_TIMEOUT_MS))),
          ]).catch(() => undefined);
          clearTimeout(timer);
          state.stale = !counts;
          if (counts) {
            state.counts = counts;
            state.readAt = Date.now();
          }
        })().finally(() => (refreshing = undefined)));
      new Gauge({
        name: 'queue_jobs',
        help: 'Jobs in each queue by state, as last read from Redis (see queue_jobs_stale)',
        labelNames: ['queue', 'state'] as const,
        registers: [this.registry],
        async collect() {
          await refresh();
          // A failed read leaves the last values in place: queue_jobs_stale says they are old.
          for (const [queue, counts] of state.counts ?? []) {
            for (const [s, n] of Object.entries(counts)) this.set({ queue, state: s }, n);
          }
        },
      });
      new Gauge({
        name: 'queue_jobs_stale',
        help: '1 when this scrape could not read the queue counts from Redis (queue_jobs holds the last values read), else 0',
        registers: [this.registry],
        async collect() {
          await refresh();
          this.set(state.stale ? 1 : 0);
        },
      });
      new Gauge({
        name: 'queue_jobs_last_read_timestamp_seconds',
        help: 'Unix time of the last successful read of the queue counts from Redis (0: never read)',
        registers: [this.registry],
        async collect() {
          await refresh();
          this.set(state.readAt / 1000);
        },
      });
    }
  }
}
