import { buildApp } from '../api/app.js';
import { listen, type RunningServer } from '../api/server.js';
import { ConfigError, metricsPortOf, type Config } from '../platform/config.js';
import { assertStuckAfterLiveSettlement } from './settlement-bounds.js';
import type { Logger } from '../platform/logger.js';
import { serveMetrics, type MetricsServer } from '../platform/metrics-server.js';
import { openRuntime, type Runtime } from './runtime.js';
import { ChainCheckBudget } from '../domain/payments/paywall/sign-in-with-x.js';
import { createRateLimits, type RateLimits } from '../api/middleware/rate-limit.js';
import { withTimeout } from '../platform/timeout.js';
import { BACKGROUND_PRIORITY } from '../platform/queues.js';
import { startWorkers } from '../../workers/queue.worker.js';
import { startScheduler } from '../../workers/scheduler.js';
import { siteCardJob } from '../../jobs/site-card.job.js';
import { reconcilePaymentsJob } from '../../jobs/reconcile-payments.job.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { recomputeAllJob } from '../../jobs/recompute-all.job.js';
import { skillAuditAllJob } from '../../jobs/skill-audit.job.js';
import type { JobContext } from '../../jobs/job.js';
import { webhookRuntime } from '../domain/webhooks/webhook-settings.js';
import { webhookPruneJob } from '../../jobs/webhook-prune.job.js';
import { webhookSweepJob } from '../../jobs/webhook-sweep.job.js';
import { startOutboxDispatcher } from '../../workers/outbox.worker.js';
import { startProjections } from '../../workers/projections.worker.js';
import { startPollingLoop } from '../../workers/polling-loop.js';
import { FunnelCounters } from '../domain/analytics/funnel-counters.js';
import { flushFunnelCounters } from '../domain/analytics/counter-flusher.js';
import { followFeedback } from '../domain/reviews/feedback-follower.js';
import type { PollingLoop } from '../../workers/polling-loop.js';
import { publishDiscoveryDefaults } from '../domain/discovery/documents.js';
import { publishSiteDocuments } from '../domain/publishing/publish-site-documents.use-cases.js';

export const ROLES = ['all', 'api', 'worker', 'scheduler'] as const;
export type Role = (typeof ROLES)[number];

export interface RunningService {
  role: Role;
  runtime: Runtime;
  server: RunningServer | undefined;
  /** The /metrics port of a worker or scheduler process (an API process serves /metrics on its own port). */
  metricsServer: MetricsServer | undefined;
  /** Stops in order: scheduler, polling loops, HTTP (drain), workers (finish running jobs), metrics, clients. */
  stop(): Promise<void>;
}

/**
 * Embedded parts live inside one process; a separate api/worker/scheduler process would start
 * its own private copy and never see the others' data. So split roles need real services.
 */
export function assertRoleConfig(role: Role, config: Config): void {
  if (role === 'all') return;
  const missing = [
    !config.database.url && 'DATABASE_URL',
    !config.redis.url && 'REDIS_URL',
    !config.s3.endpoint && 'S3_ENDPOINT',
    !config.chain.rpcUrl && 'RPC_URL',
  ].filter(Boolean);
  if (missing.length) {
    throw new ConfigError([
      `Role "${role}" shares its data with other processes, so it cannot use embedded defaults. Set ${missing.join(', ')}, ` +
        'or run everything in one process with `npm start` (role "all").',
    ]);
  }
}

export const SCHEDULE = (config: Config) => [
  // runAtStart: at every start, under a job id of that start's own (workers/scheduler.ts).
  { name: siteCardJob.name, queue: siteCardJob.queue, cron: config.siteCardCron, runAtStart: true },
  { name: reconcilePaymentsJob.name, queue: reconcilePaymentsJob.queue, cron: '* * * * *', runAtStart: true },
  { name: populationStatsJob.name, queue: populationStatsJob.queue, cron: config.populationCron, runAtStart: true },
  // Freshness and percentiles drift with time even when nothing happens: every agent, daily.
  { name: recomputeAllJob.name, queue: recomputeAllJob.queue, cron: config.recomputeCron, runAtStart: false },
  // Versions not audited under the current rules (written before the audit existed, or by rules
  // since changed, or whose audit job was lost) are queued for an audit: at start and daily.
  { name: skillAuditAllJob.name, queue: skillAuditAllJob.queue, cron: '41 3 * * *', runAtStart: true },
  // The webhook delivery log keeps finished deliveries for 30 days.
  { name: webhookPruneJob.name, queue: webhookPruneJob.queue, cron: '23 4 * * *', runAtStart: false },
  // Pending deliveries whose job gave up or was lost with Redis are queued again.
  { name: webhookSweepJob.name, queue: webhookSweepJob.queue, cron: '*/5 * * * *', runAtStart: true },
];

/** What job handlers get from a runtime. */
export function jobContext(runtime: Runtime): JobContext {
  return {
    db: runtime.database.db,
    store: runtime.store,
    log: runtime.log,
    site: runtime.site,
    chain: runtime.chain,
    facilitators: runtime.facilitators,
    settlementEffects: runtime.settlementEffects,
    paymentsStuckAfterMs: runtime.config.paymentsStuckAfterMs,
    enqueueSettlement: runtime.enqueueSettlement,
    renderTurns: runtime.renderTurns,
    receipts: runtime.receipts,
    documentsPublished: runtime.metrics.documentsPublished,
    webhooks: webhookRuntime(
      runtime.config.webhooks,
      { publicBaseUrl: runtime.site.baseUrl, listenHost: runtime.config.host, port: runtime.config.port },
      runtime.queues,
    ),
    enqueueDocuments: async (jobs, opts) => {
      // A prioritized BullMQ job waits while any job without a priority is waiting, and for every
      // job of a lower priority number: the later stages of a background piece of work wait.
      const priority = opts?.background ? { priority: BACKGROUND_PRIORITY + (opts.stage ?? 0) } : {};
      await runtime.queues.documents.addBulk(
        jobs.map((j) => ({
          name: j.name,
          data: j.data,
          opts: { jobId: j.jobId, ...priority, ...(j.delay ? { delay: j.delay } : {}) },
        })),
      );
    },
  };
}

/** How long an API start waits for the site documents before it listens without them. */
const SITE_DOCUMENTS_AT_START_MS = 5_000;

/**
 * The site AgentCard names the receipt key that `/.well-known/x402` (answered by this process)
 * states, so it is published before the first request is answered: the two never name different
 * keys, whatever key the previous run had. Unchanged documents cost one read. A bucket that does
 * not answer in time delays nothing further: the start-up `site-card` job publishes them too.
 */
async function publishSiteDocumentsBeforeListening(runtime: Runtime): Promise<void> {
  const deps = {
    db: runtime.database.db,
    store: runtime.store,
    site: runtime.site,
    receipts: runtime.receipts,
    documentsPublished: runtime.metrics.documentsPublished,
  };
  try {
    await withTimeout(publishSiteDocuments(deps), SITE_DOCUMENTS_AT_START_MS, 'publishing the site documents');
  } catch (err) {
    runtime.log.warn({ err }, 'site documents not published before listening; the site-card job publishes them');
  }
}

/** Starts the parts of the service a role runs. */
export async function startService(role: Role, config: Config, log: Logger): Promise<RunningService> {
  assertRoleConfig(role, config);
  assertStuckAfterLiveSettlement(config);
  const runtime = await openRuntime(config, log);
  const runsApi = role === 'all' || role === 'api';
  const runsWorker = role === 'all' || role === 'worker';
  const runsScheduler = role === 'all' || role === 'scheduler';

  let server: RunningServer | undefined;
  let metricsServer: MetricsServer | undefined;
  let rateLimits: RateLimits | undefined;
  let workers: ReturnType<typeof startWorkers> | undefined;
  let scheduler: ReturnType<typeof startScheduler> | undefined;
  let dispatcher: PollingLoop | undefined;
  let projections: PollingLoop | undefined;
  let feedback: PollingLoop | undefined;
  let counterFlush: PollingLoop | undefined;
  const analytics = new FunnelCounters();
  const flushCounters = () =>
    flushFunnelCounters({ db: runtime.database.db, queues: runtime.queues, counters: analytics, log });

  // Every step is bounded: with Redis or the database gone, a close that waits for an answer
  // would keep the process alive after SIGTERM. A step cut short is logged and skipped.
  const stopParts = async () => {
    const endAt = Date.now() + Math.max(1_500, config.shutdownTimeoutMs - 1_000);
    const left = (atMost: number) => Math.max(100, Math.min(atMost, endAt - Date.now()));
    const step = async (name: string, work: () => Promise<unknown> | undefined, atMost: number) => {
      try {
        await withTimeout(Promise.resolve(work()), left(atMost), name);
      } catch (err) {
        log.warn({ err, step: name }, 'shutdown step cut short');
        return false;
      }
      return true;
    };
    await step('scheduler', () => scheduler?.stop(), 1_000);
    await step('event dispatcher', () => dispatcher?.stop(), 1_000);
    await step('projections', () => projections?.stop(), 1_000);
    await step('reputation feedback', () => feedback?.stop(), 1_000);
    await server?.close(left(config.shutdownTimeoutMs));
    // The last requests' counts, once the server no longer takes any.
    await step(
      'analytics counters',
      async () => {
        await counterFlush?.stop();
        if (counterFlush) await flushCounters();
      },
      1_000,
    );
    await step('rate limits', () => rateLimits?.close(), 500);
    // Running jobs get what is left but a moment. Past it their workers' Redis connections are
    // dropped: the jobs are abandoned, their locks expire and they run again elsewhere (idempotent).
    if (!(await step('workers', () => workers?.close(), endAt - Date.now() - 1_000)))
      await step('workers (disconnected)', () => workers?.disconnect(), 500);
    await step('metrics', () => metricsServer?.close(), 200);
    await step('clients', () => runtime.close(), 1_000);
  };
  try {
    if (runsApi) {
      // Queue depth, payments in flight and feed lag are the same whichever process reads them:
      // the API processes serve them, the processes without an API only what they do themselves.
      runtime.metrics.addSharedStateGauges(runtime.queues, runtime.database.pool);
      rateLimits = createRateLimits({
        redisUrl: runtime.redis.url,
        prefix: config.redis.prefix,
        policy: config.rateLimits,
        log,
      });
      const app = buildApp({
        config,
        log,
        db: runtime.database.db,
        store: runtime.store,
        queues: runtime.queues,
        metrics: runtime.metrics,
        chain: runtime.chain,
        site: runtime.site,
        adminToken: runtime.adminToken,
        jwt: runtime.jwt,
        receipts: runtime.receipts,
        paywall: runtime.paywall,
        facilitators: runtime.facilitators,
        rateLimits,
        siwxChainChecks: new ChainCheckBudget(),
        analytics,
        readiness: [
          { name: 'database', required: true, check: async () => void (await runtime.database.pool.query('SELECT 1')) },
          { name: 'redis', check: async () => void (await runtime.queues.documents.count()) },
          { name: 'bucket', check: () => runtime.store.ping() },
          { name: 'chain', check: async () => void (await runtime.chain.ping()) },
        ],
      });
      runtime.metrics.watchFunnelCounters(analytics);
      counterFlush = startPollingLoop({
        name: 'analytics counter flush',
        intervalMs: config.analyticsFlushMs,
        log,
        pass: flushCounters,
      });
      await publishSiteDocumentsBeforeListening(runtime);
      server = await listen(app, config.port, config.host, log);
    }
    if (runsWorker) {
      workers = startWorkers(jobContext(runtime), {
        connection: () => runtime.redis.connection(),
        prefix: config.redis.prefix,
        concurrency: config.workerConcurrency,
        metrics: runtime.metrics,
      });
      dispatcher = startOutboxDispatcher(runtime.database.db, runtime.queues, log);
      feedback = startPollingLoop({
        name: 'reputation feedback',
        intervalMs: runtime.chain.embedded ? 250 : 4_000,
        log,
        pass: () =>
          followFeedback({
            db: runtime.database.db,
            chain: runtime.chain,
            baseUrl: runtime.site.baseUrl,
            confirmations: config.chain.reputationConfirmations ?? (runtime.chain.embedded ? 0 : 2),
            startBlock: config.chain.reputationStartBlock ?? (runtime.chain.embedded ? 0n : undefined),
            log,
          }),
      });
      projections = startProjections({
        db: runtime.database.db,
        queues: runtime.queues,
        log,
        publishDefaults: () =>
          publishDiscoveryDefaults(
            {
              db: runtime.database.db,
              store: runtime.store,
              site: runtime.site,
              documentsPublished: runtime.metrics.documentsPublished,
            },
            'feeds',
          ),
        bazaar: { site: runtime.site, chain: runtime.chain },
      });
    }
    if (runsScheduler) {
      scheduler = startScheduler(runtime.queues, SCHEDULE(config), log, runtime.metrics);
      await scheduler.ready;
    }
    if (!runsApi) {
      metricsServer = await serveMetrics(runtime.metrics.registry, {
        port: metricsPortOf(config, role === 'scheduler' ? 'scheduler' : 'worker'),
        host: config.host,
        adminToken: runtime.adminToken,
        log,
      });
    }
  } catch (err) {
    // What started before the failure stops again, so a failed start leaves nothing running.
    await stopParts();
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    role,
    runtime,
    server,
    metricsServer,
    stop() {
      stopping ??= stopParts();
      return stopping;
    },
  };
}
