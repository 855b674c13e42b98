import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Queues } from './queues.js';

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

  constructor(queues?: Queues) {
    collectDefaultMetrics({ register: this.registry });
    if (queues) {
      const queueList = Object.values(queues);
      new Gauge({
        name: 'queue_jobs',
        help: 'Jobs in each queue by state',
        labelNames: ['queue', 'state'] as const,
        registers: [this.registry],
        async collect() {
          for (const q of queueList) {
            const counts = await q.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized');
            for (const [state, n] of Object.entries(counts)) this.set({ queue: q.name, state }, n);
          }
        },
      });
    }
  }
}
