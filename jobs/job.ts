import type { z } from 'zod';
import type { Db } from '../src/data/db.js';
import type { Logger } from '../src/platform/logger.js';
import type { ObjectStore } from '../src/platform/object-store.js';
import type { QueueName } from '../src/platform/queues.js';
import type { SiteInfo } from '../src/documents/site-info.js';
import type { ChainHandle } from '../src/platform/blockchain.js';
import type { RenderTurns } from '../src/platform/render-turns.js';
import type { FacilitatorPool } from '../src/domain/payments/facilitators/pool.js';
import type { SettlementEffects } from '../src/domain/payments/ledger/settlement.js';
import type { PublishCounter } from '../src/domain/publishing/publish-document.js';
import type { ReceiptIssuer } from '../src/domain/payments/protocol/extensions/offer-receipt.js';
import type { WebhookNetworkPolicy } from '../src/domain/webhooks/endpoint-url.js';
import type { RetrySchedule } from '../src/domain/webhooks/retry-schedule.js';

export type { SiteInfo };

/** Everything a job handler may use. Handlers call use cases; they never see BullMQ objects. */
export interface JobContext {
  db: Db;
  store: ObjectStore;
  log: Logger;
  site: SiteInfo;
  chain: ChainHandle;
  facilitators: FacilitatorPool;
  /** What each payment purpose buys; the settle-payment job applies it to the payments it settles. */
  settlementEffects: SettlementEffects;
  /** How old an in-flight payment must be before the reconciler treats it as stuck (PAYMENTS_STUCK_AFTER_MS). */
  paymentsStuckAfterMs: number;
  /** Queues a settlement check for a payment (deduplicated per payment). */
  enqueueSettlement(paymentId: string): Promise<void>;
  /** Which renders of an agent's documents another render overtook (src/platform/render-turns.ts). */
  renderTurns: RenderTurns;
  /** Signs payment receipts: the site card publishes its key, the reputation mirror carries its receipts. */
  receipts: ReceiptIssuer;
  /** Counts what publishing wrote and left unchanged (documents_published_total). */
  documentsPublished: PublishCounter;
  /**
   * Queues document jobs in bulk (ids deduplicate). `background` jobs (a full recompute's pages, a
   * re-audit of every version, the skills-index shards never published) are taken only when no
   * other job of the queue is waiting, so a sale's documents never wait behind a million of them.
   * A background job's `stage` (default 0) orders the stages of one piece of work: a job of a later
   * stage is taken only when no job of an earlier one is waiting. A job with a `delay` (ms) runs no
   * sooner.
   */
  enqueueDocuments(
    jobs: Array<{ name: string; data: Record<string, unknown>; jobId: string; delay?: number }>,
    opts?: { background?: boolean; stage?: number },
  ): Promise<void>;
  /** Webhook deliveries: where they may connect, their retry schedule, and how they are queued (and queued again). */
  webhooks: {
    policy: WebhookNetworkPolicy;
    schedule: RetrySchedule;
    enqueue(deliveryIds: string[]): Promise<void>;
    requeue(deliveryIds: string[]): Promise<string[]>;
  };
  /** Reports a long job's progress on the job (the queue dashboard and `ops` show it); absent outside a worker. */
  progress?(value: Record<string, number>): Promise<void>;
}

export interface JobDefinition<P extends z.ZodType = z.ZodType> {
  name: string;
  queue: QueueName;
  payload: P;
  run(ctx: JobContext, payload: z.infer<P>): Promise<Record<string, unknown> | undefined>;
}

export function defineJob<P extends z.ZodType>(job: JobDefinition<P>): JobDefinition<P> {
  return job;
}

/**
 * Thrown by a job that has nothing to do yet (a stage waiting for the one before it): the job is
 * run again after `ms`, without counting as an attempt or a failure and without holding a worker
 * meanwhile.
 */
export class RunAgainLater extends Error {
  constructor(readonly ms: number) {
    super(`nothing to do yet: runs again in ${ms} ms`);
  }
}
