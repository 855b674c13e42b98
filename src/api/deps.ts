import type { Db } from '../data/db.js';
import type { SiteInfo } from '../documents/site-info.js';
import type { ChainHandle } from '../platform/blockchain.js';
import type { Config } from '../platform/config.js';
import type { Logger } from '../platform/logger.js';
import type { Metrics } from '../platform/metrics.js';
import type { ObjectStore } from '../platform/object-store.js';
import type { Queues } from '../platform/queues.js';
import type { JwtKeys } from '../domain/identity/jwt.js';
import type { Paywall } from '../domain/payments/paywall/paywall.js';
import type { ReceiptIssuer } from '../domain/payments/protocol/extensions/offer-receipt.js';
import type { FacilitatorPool } from '../domain/payments/facilitators/pool.js';
import type { ChainCheckBudget } from '../domain/payments/paywall/sign-in-with-x.js';
import type { RateLimits } from './middleware/rate-limit.js';
import type { FunnelCounters } from '../domain/analytics/funnel-counters.js';

export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
  /** Whether this process is not ready without it (the database); otherwise it only degrades. */
  required?: boolean;
}

/** Everything route handlers may use. */
export interface ApiDeps {
  config: Config;
  log: Logger;
  db: Db;
  store: ObjectStore;
  queues: Queues;
  metrics: Metrics;
  chain: ChainHandle;
  site: SiteInfo;
  readiness: ReadinessCheck[];
  adminToken: string;
  jwt: JwtKeys;
  paywall: Paywall;
  /** Signs the x402 offer-receipt receipts of settled payments. */
  receipts: ReceiptIssuer;
  facilitators: FacilitatorPool;
  rateLimits: RateLimits;
  /** Sign-In-With-X proofs checked on chain (smart wallets): one per client per window. */
  siwxChainChecks: ChainCheckBudget;
  /** The seller-analytics funnel steps this process counts in memory and flushes in batches. */
  analytics: FunnelCounters;
}
