import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Pool } from 'pg';
import type { Queues } from './queues.js';
import { withTimeout } from './timeout.js';

/**
 * How long a scrape waits for a value it reads from Redis or PostgreSQL. Past it (a dependency down
 * or partitioned) the scrape answers with the last value read and marks it stale.
 */
export const SCRAPE_READ_TIMEOUT_MS = 500;
const JOB_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized'] as const;

/**
 * Prometheus metrics of one process: each counter and histogram is fed by the process that does
 * the work (requests and shed searches in the API, jobs and publishes in the workers), plus Node's
 * defaults. `addSharedStateGauges` adds the gauges read from Redis and PostgreSQL at scrape time.
 */
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

  readonly scheduledTicks = new Counter({
    name: 'scheduler_ticks_total',
    help: 'Scheduled job ticks by job name and outcome: enqueued, or failed (Redis refused it past the retry window)',
    labelNames: ['name', 'outcome'] as const,
    registers: [this.registry],
  });

  private sharedStateGauges = false;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  private funnelCounters = false;

  /**
   * Adds the gauges of the seller-analytics counters an API process holds in memory: the seconds
   * since they were last flushed (what a crash would lose), how many wait, and how many were dropped
   * past their bound. Read from the process itself at scrape time; added at most once.
   */
  watchFunnelCounters(counters: {
    readonly lastFlushAt: number;
    readonly size: number;
    readonly dropped: number;
  }): void {
    if (this.funnelCounters) return;
    this.funnelCounters = true;
    const registers = [this.registry];
    new Gauge({
      name: 'analytics_counter_flush_lag_seconds',
      help: 'Seconds since this process last wrote its seller-analytics counters (views, challenges, deliveries) to the database',
      registers,
      collect() {
        this.set(Math.max(0, (Date.now() - counters.lastFlushAt) / 1000));
      },
    });
    new Gauge({
      name: 'analytics_counters_pending',
      help: 'Distinct seller-analytics counters waiting for the next flush in this process',
      registers,
      collect() {
        this.set(counters.size);
      },
    });
    new Gauge({
      name: 'analytics_counts_dropped',
      help: 'Counts this process dropped because its pending counters were at their bound (since start)',
      registers,
      collect() {
        this.set(counters.dropped);
      },
    });
  }

  /**
   * Adds the gauges of state every process shares: queue depth from Redis and the operator's
   * questions about PostgreSQL (payments in flight, feed lag), read at scrape time, each within
   * SCRAPE_READ_TIMEOUT_MS: past it (a dependency down or partitioned) the scrape answers with the
   * last values read and marks them stale, so /metrics stays quick and never fails. The API
   * processes serve them (every one reads the same values); a process adds them at most once.
   */
  addSharedStateGauges(queues: Queues, pool: Pool): void {
    if (this.sharedStateGauges) return;
    this.sharedStateGauges = true;
    const registers = [this.registry];
    // One query per scrape feeds both payment gauges (the partial index on unsettled rows).
    const payments = lastGood(
      async () =>
        (
          await pool.query<{ status: string; n: number; oldest: number }>(
            `SELECT status, count(*)::int AS n, extract(epoch FROM now() - min(updated_at))::float AS oldest
           FROM payments WHERE status IN ('pending', 'verified', 'settling') GROUP BY status`,
          )
        ).rows,
    );
    const feedLag = lastGood(
      async () =>
        (
          await pool.query<{ feed: string; lag: number | null }>(
            `SELECT k.feed, (SELECT extract(epoch FROM now() - min(t.updated_at))::float
                           FROM (SELECT updated_at, change_txid FROM agents WHERE k.feed = 'agent'
                                 UNION ALL SELECT updated_at, change_txid FROM posts WHERE k.feed = 'post') t
                           WHERE t.change_txid >= coalesce((SELECT watermark FROM projection_watermarks w WHERE w.projection = k.feed), '0'::xid8)) AS lag
           FROM (VALUES ('agent'), ('post')) k(feed)`,
          )
        ).rows,
    );
    const IN_FLIGHT = ['pending', 'verified', 'settling'];
    new Gauge({
      name: 'payments_in_flight',
      help: 'Payments not yet final, by status (a settling payment waits for its transaction)',
      labelNames: ['status'] as const,
      registers,
      async collect() {
        const rows = (await payments.refresh()).value;
        if (rows) for (const status of IN_FLIGHT) this.set({ status }, rows.find((r) => r.status === status)?.n ?? 0);
      },
    });
    new Gauge({
      name: 'payments_oldest_in_flight_seconds',
      help: 'Seconds since the oldest payment in each non-final status last changed (0 when none); see the stuck-payment runbook',
      labelNames: ['status'] as const,
      registers,
      async collect() {
        const rows = (await payments.refresh()).value;
        if (rows)
          for (const status of IN_FLIGHT) this.set({ status }, rows.find((r) => r.status === status)?.oldest ?? 0);
      },
    });
    new Gauge({
      name: 'feed_lag_seconds',
      help: 'Age of the oldest committed change not yet in the delta feed (0 when caught up), by feed',
      labelNames: ['feed'] as const,
      registers,
      async collect() {
        for (const r of (await feedLag.refresh()).value ?? []) this.set({ feed: r.feed }, Math.max(0, r.lag ?? 0));
      },
    });
    new Gauge({
      name: 'database_gauges_stale',
      help: '1 when this scrape could not read the payment and feed gauges from PostgreSQL in time (they hold the last values read), else 0',
      registers,
      async collect() {
        const [a, b] = await Promise.all([payments.refresh(), feedLag.refresh()]);
        this.set(a.stale || b.stale ? 1 : 0);
      },
    });
    // Webhook delivery health (docs/webhooks.md): one query per scrape, over the last day's
    // deliveries only (an index on created_at), the due backlog and the disabled endpoints.
    const webhooks = lastGood(
      async () =>
        (
          await pool.query<{ kind: string; key: string; n: number }>(
            `SELECT 'status' AS kind, status AS key, count(*)::float AS n FROM webhook_deliveries
               WHERE created_at > now() - interval '1 day' GROUP BY status
             UNION ALL SELECT 'lag', '', coalesce(extract(epoch FROM now() - min(next_attempt_at)), 0)::float
               FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
             UNION ALL SELECT 'disabled', '', count(*)::float FROM webhook_endpoints WHERE status = 'disabled'`,
          )
        ).rows,
    );
    new Gauge({
      name: 'webhook_deliveries',
      help: 'Webhook deliveries created in the last 24 hours, by outcome (pending: still being tried)',
      labelNames: ['outcome'] as const,
      registers,
      async collect() {
        const rows = (await webhooks.refresh()).value;
        if (rows)
          for (const outcome of ['pending', 'succeeded', 'failed'])
            this.set({ outcome }, rows.find((r) => r.kind === 'status' && r.key === outcome)?.n ?? 0);
      },
    });
    new Gauge({
      name: 'webhook_delivery_lag_seconds',
      help: 'How long the most overdue webhook attempt has waited past its due time (0 when none is due): the webhooks queue lag',
      registers,
      async collect() {
        const row = (await webhooks.refresh()).value?.find((r) => r.kind === 'lag');
        if (row) this.set(Math.max(0, row.n));
      },
    });
    new Gauge({
      name: 'webhook_endpoints_disabled',
      help: 'Webhook endpoints disabled (after a delivery failed for its whole retry schedule, or by their owner)',
      registers,
      async collect() {
        const row = (await webhooks.refresh()).value?.find((r) => r.kind === 'disabled');
        if (row) this.set(row.n);
      },
    });
    const queueList = Object.values(queues);
    const counts = lastGood(() =>
      Promise.all(queueList.map(async (q) => [q.name, await q.getJobCounts(...JOB_STATES)] as const)),
    );
    new Gauge({
      name: 'queue_jobs',
      help: 'Jobs in each queue by state, as last read from Redis (see queue_jobs_stale)',
      labelNames: ['queue', 'state'] as const,
      registers,
      async collect() {
        for (const [queue, byState] of (await counts.refresh()).value ?? []) {
          for (const [s, n] of Object.entries(byState)) this.set({ queue, state: s }, n);
        }
      },
    });
    new Gauge({
      name: 'queue_jobs_stale',
      help: '1 when this scrape could not read the queue counts from Redis (queue_jobs holds the last values read), else 0',
      registers,
      async collect() {
        this.set((await counts.refresh()).stale ? 1 : 0);
      },
    });
    new Gauge({
      name: 'queue_jobs_last_read_timestamp_seconds',
      help: 'Unix time of the last successful read of the queue counts from Redis (0: never read)',
      registers,
      async collect() {
        this.set((await counts.refresh()).readAt / 1000);
      },
    });
  }
}

/**
 * A value read at scrape time without ever holding a scrape up. The gauges of one scrape share one
 * read (prom-client collects them together); at most one read of the source runs at a time, so
 * while one hangs later scrapes do not pile up reads of their own; a read that fails or takes more
 * than SCRAPE_READ_TIMEOUT_MS leaves the last value in place and marks it stale.
 */
function lastGood<T>(read: () => Promise<T>) {
  const state: { value: T | undefined; readAt: number; stale: boolean } = { value: undefined, readAt: 0, stale: true };
  let reading: Promise<T> | undefined;
  let refreshing: Promise<typeof state> | undefined;
  return {
    refresh: () =>
      (refreshing ??= (async () => {
        reading ??= read().finally(() => (reading = undefined));
        const value = await withTimeout(reading, SCRAPE_READ_TIMEOUT_MS, 'a metrics read').catch(() => undefined);
        state.stale = value === undefined;
        if (value !== undefined) {
          state.value = value;
          state.readAt = Date.now();
        }
        return state;
      })().finally(() => (refreshing = undefined))),
  };
}
