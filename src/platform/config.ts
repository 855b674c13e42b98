import { z } from 'zod';
import { parseRateLimits, type RateLimitPolicy } from './rate-limit-policy.js';
import { parseOrigins } from './allowed-origins.js';

/**
 * The only module that reads `process.env`. Every variable is validated once at start;
 * a production deployment that still points at an embedded dev part, or lacks a secret,
 * refuses to start (see `assertProductionReady`).
 *
 * Every variable here is documented in docs/configuration.md; keep them in step.
 */
const booleanish = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  /**
   * Where a worker or the scheduler serves /metrics (an API process serves it on PORT). Default per
   * role: DEFAULT_METRICS_PORTS. Processes of those roles sharing one host need one each; 0 picks a free one.
   */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  PUBLIC_BASE_URL: z.url().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().default('.data'),

  DATABASE_URL: z.string().optional(),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** Longest wait for a database connection (a new one, or a free one from a full pool) before 503. */
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  /** statement_timeout of every session; batch jobs raise it for their own statements. */
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  REDIS_URL: z.string().optional(),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_{}-]+$/)
    .default('market'),

  S3_ENDPOINT: z.url().optional(),
  S3_REGION: z.string().default('us-east-1'),
  S3_BUCKET: z.string().default('market-public'),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_FORCE_PATH_STYLE: booleanish.default(true),
  /** When true the API process also serves the bucket's keys at their public paths (the embedded CDN). */
  SERVE_BUCKET: booleanish.optional(),

  RPC_URL: z.url().optional(),
  CHAIN_ID: z.coerce.number().int().positive().optional(),
  USDC_ADDRESS: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/)
    .optional(),
  IDENTITY_REGISTRY_ADDRESS: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/)
    .optional(),
  TREASURY_ADDRESS: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/)
    .optional(),
  FACILITATOR_PRIVATE_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/)
    .optional(),
  FACILITATOR_URLS: z.string().optional(),
  CHAIN_POLL_INTERVAL_MS: z.coerce.number().int().min(5).max(60_000).optional(),
  /**
   * The most authorizations the built-in facilitator settles in one transaction (Multicall3);
   * 0 settles each payment in a transaction of its own through the official exact scheme.
   */
  SETTLEMENT_BATCH_MAX: z.coerce.number().int().min(0).max(200).default(50),
  FACILITATOR_BUILTIN: booleanish.optional(),
  FACILITATOR_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  FACILITATOR_FAILURE_THRESHOLD: z.coerce.number().int().min(1).max(100).default(3),
  FACILITATOR_HALF_OPEN_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  ENABLE_FAUCET: booleanish.optional(),

  JWT_PRIVATE_KEY: z.string().optional(),
  /**
   * Whether paid routes speak the x402 v2 extensions (bazaar, sign-in-with-x, payment-identifier,
   * offer-receipt). Off, they answer plain x402 (what bench/paid-requests.ts compares against).
   */
  X402_EXTENSIONS: booleanish.default(true),
  /** The key that signs x402 offer-receipt receipts (EIP-712); its address is published in the site AgentCard. */
  RECEIPT_PRIVATE_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/)
    .optional(),
  /**
   * The public origin signed by the treasury key (EIP-191), proving to x402 crawlers that the
   * treasury which registration fees pay belongs to this origin. Without it, and without a
   * treasury key at hand (the embedded chain has one), registration is listed without a proof.
   */
  TREASURY_OWNERSHIP_PROOF: z
    .string()
    .regex(/^0x([0-9a-fA-F]{2})+$/)
    .optional(),
  JWT_PREVIOUS_PUBLIC_KEYS: z.string().optional(),
  JWT_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 86_400)
    .default(86_400),
  ADMIN_TOKEN: z.string().min(16).optional(),

  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i)
    .default('256kb'),
  /**
   * The least a paid skill may cost, in atomic USDC (6 decimals); 0 (free) is always allowed. The
   * default, 0.01 USDC, is about three times the gas of settling one sale alone on Base at 0.01 gwei
   * and 4,000 USD an ETH (docs/security.md, "Prices and wash trading", has the arithmetic).
   */
  MIN_PRICE_ATOMIC: z.coerce.bigint().min(0n).max(1_000_000_000n).default(10_000n),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  SEARCH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /**
   * Which proxies in front of the API may name the client in X-Forwarded-For: `false` (none: the
   * client is the peer address), a number of hops (`1` behind one edge), or addresses and CIDRs
   * (`loopback, 10.0.0.0/8`). Trusting every hop would let any client pick the address its rate
   * limits are counted by.
   */
  TRUST_PROXY: z
    .string()
    .default('false')
    .refine(
      (v) => v !== 'true',
      'must not be true (any client could then choose its own address); give a hop count or addresses',
    )
    .transform((v) => (v === 'false' ? false : /^\d+$/.test(v) ? Number(v) : v)),
  /** Per-client request limits of the costly routes: `off`, or `bucket=n` pairs over the defaults. */
  RATE_LIMITS: z
    .string()
    .optional()
    .transform((text, ctx) => {
      try {
        return parseRateLimits(text);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /** Browser origins allowed to call /mcp besides PUBLIC_BASE_URL's (comma-separated); loopback only outside production. */
  MCP_ALLOWED_ORIGINS: z
    .string()
    .optional()
    .transform((text, ctx) => {
      try {
        return parseOrigins(text);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  SEARCH_QUEUE_MAX: z.coerce.number().int().min(0).max(100_000).default(1000),
  SEARCH_QUEUE_WAIT_MS: z.coerce.number().int().min(10).max(120_000).default(10_000),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8000),
  SITE_CARD_CRON: z.string().default('*/5 * * * *'),
  POPULATION_CRON: z.string().default('*/15 * * * *'),
  RECOMPUTE_CRON: z.string().default('17 3 * * *'),
  /**
   * Age after which the reconciler hands an in-flight payment to the settle-payment job. Must
   * exceed the longest a request may still be settling (see `assertStuckAfterLiveSettlement`).
   */
  PAYMENTS_STUCK_AFTER_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  env: Env['NODE_ENV'];
  production: boolean;
  port: number;
  host: string;
  /** METRICS_PORT as set; `metricsPortOf` gives the port a role listens on. */
  metricsPort: number | undefined;
  /** Public base URL the documents link to; derived from HOST/PORT when unset (embedded mode). */
  publicBaseUrl: string | undefined;
  logLevel: Env['LOG_LEVEL'];
  dataDir: string;
  database: { url: string | undefined; poolMax: number; connectTimeoutMs: number; statementTimeoutMs: number };
  redis: { url: string | undefined; prefix: string };
  s3: {
    endpoint: string | undefined;
    region: string;
    bucket: string;
    accessKeyId: string | undefined;
    secretAccessKey: string | undefined;
    forcePathStyle: boolean;
  };
  serveBucket: boolean;
  chain: {
    rpcUrl: string | undefined;
    chainId: number | undefined;
    usdcAddress: `0x${string}` | undefined;
    identityRegistryAddress: `0x${string}` | undefined;
    treasuryAddress: `0x${string}` | undefined;
    facilitatorPrivateKey: `0x${string}` | undefined;
    facilitatorUrls: string[];
    /** Run the built-in facilitator (needs a facilitator key; the embedded chain has one). */
    facilitatorBuiltin: boolean;
    facilitatorTimeoutMs: number;
    facilitatorFailureThreshold: number;
    facilitatorHalfOpenMs: number;
    /** Receipt polling of the built-in facilitator; default 10 ms on embedded anvil, 250 ms otherwise. */
    pollIntervalMs: number | undefined;
    /** Authorizations per settlement transaction of the built-in facilitator; 0 is one per payment, unbatched. */
    settlementBatchMax: number;
  };
  faucetEnabled: boolean;
  jwtPrivateKey: string | undefined;
  receiptPrivateKey: `0x${string}` | undefined;
  x402Extensions: boolean;
  treasuryOwnershipProof: `0x${string}` | undefined;
  jwtPreviousPublicKeys: string[];
  jwtTtlSeconds: number;
  adminToken: string | undefined;
  bodyLimit: string;
  /** The least a paid skill may cost, in atomic USDC (MIN_PRICE_ATOMIC); a lower non-zero price is refused. */
  minPriceAtomic: bigint;
  shutdownTimeoutMs: number;
  workerConcurrency: number;
  /** Searches one API process computes at once; the rest wait their turn, in order (docs/discovery.md). */
  searchConcurrency: number;
  /** Express's `trust proxy`: which hops may name the client (TRUST_PROXY). */
  trustProxy: boolean | number | string;
  /** Requests per client address a minute on the costly routes; undefined when limits are off. */
  rateLimits: RateLimitPolicy | undefined;
  /** Browser origins the MCP endpoint accepts besides the public one (MCP_ALLOWED_ORIGINS). */
  mcpAllowedOrigins: string[];
  /** Searches allowed to wait; beyond this a search is answered 503 with Retry-After. */
  searchQueueMax: number;
  /** How long a search may wait for a slot before it is answered 503 (its client has likely given up). */
  searchQueueWaitMs: number;
  siteCardCron: string;
  populationCron: string;
  recomputeCron: string;
  /** In flight longer than this, a payment is stuck, not a request in progress (the reconciler's threshold). */
  paymentsStuckAfterMs: number;
}

/**
 * The /metrics port of each role that runs no API, when METRICS_PORT is unset: next to the
 * Prometheus exporters' own range, and different per role so a worker and the scheduler can share a host.
 */
export const DEFAULT_METRICS_PORTS = { worker: 9464, scheduler: 9465 } as const;

/** The port a worker or the scheduler serves /metrics on. */
export function metricsPortOf(config: Config, role: keyof typeof DEFAULT_METRICS_PORTS): number {
  return config.metricsPort ?? DEFAULT_METRICS_PORTS[role];
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Parse and validate an environment (defaults to `process.env`). Throws `ConfigError` listing every problem. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  // An empty value means unset (env files list every variable, leaving secrets blank), so the
  // production check names it as missing instead of as malformed.
  const parsed = EnvSchema.safeParse(Object.fromEntries(Object.entries(source).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const e = parsed.data;
  const production = e.NODE_ENV === 'production';
  const config: Config = {
    env: e.NODE_ENV,
    production,
    port: e.PORT,
    host: e.HOST,
    metricsPort: e.METRICS_PORT,
    publicBaseUrl: e.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
    logLevel: e.LOG_LEVEL,
    dataDir: e.DATA_DIR,
    database: {
      url: e.DATABASE_URL,
      poolMax: e.DATABASE_POOL_MAX,
      connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    },
    redis: { url: e.REDIS_URL, prefix: e.QUEUE_PREFIX },
    s3: {
      endpoint: e.S3_ENDPOINT,
      region: e.S3_REGION,
      bucket: e.S3_BUCKET,
      accessKeyId: e.S3_ACCESS_KEY_ID,
      secretAccessKey: e.S3_SECRET_ACCESS_KEY,
      forcePathStyle: e.S3_FORCE_PATH_STYLE,
    },
    // Without a CDN in front, someone has to answer the static paths: by default the API does
    // in dev, and in production only when asked to (a CDN normally routes them to the bucket).
    serveBucket: e.SERVE_BUCKET ?? !production,
    chain: {
      rpcUrl: e.RPC_URL,
      chainId: e.CHAIN_ID,
      usdcAddress: e.USDC_ADDRESS as `0x${string}` | undefined,
      identityRegistryAddress: e.IDENTITY_REGISTRY_ADDRESS as `0x${string}` | undefined,
      treasuryAddress: e.TREASURY_ADDRESS as `0x${string}` | undefined,
      facilitatorPrivateKey: e.FACILITATOR_PRIVATE_KEY as `0x${string}` | undefined,
      facilitatorUrls: (e.FACILITATOR_URLS ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      facilitatorBuiltin: e.FACILITATOR_BUILTIN ?? true,
      facilitatorTimeoutMs: e.FACILITATOR_TIMEOUT_MS,
      facilitatorFailureThreshold: e.FACILITATOR_FAILURE_THRESHOLD,
      facilitatorHalfOpenMs: e.FACILITATOR_HALF_OPEN_MS,
      pollIntervalMs: e.CHAIN_POLL_INTERVAL_MS,
      settlementBatchMax: e.SETTLEMENT_BATCH_MAX,
    },
    faucetEnabled: e.ENABLE_FAUCET ?? !production,
    jwtPrivateKey: e.JWT_PRIVATE_KEY?.replace(/\\n/g, '\n'),
    receiptPrivateKey: e.RECEIPT_PRIVATE_KEY as `0x${string}` | undefined,
    x402Extensions: e.X402_EXTENSIONS,
    treasuryOwnershipProof: e.TREASURY_OWNERSHIP_PROOF as `0x${string}` | undefined,
    jwtPreviousPublicKeys: splitPems(e.JWT_PREVIOUS_PUBLIC_KEYS),
    jwtTtlSeconds: e.JWT_TTL_SECONDS,
    adminToken: e.ADMIN_TOKEN,
    bodyLimit: e.BODY_LIMIT,
    minPriceAtomic: e.MIN_PRICE_ATOMIC,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    workerConcurrency: e.WORKER_CONCURRENCY,
    searchConcurrency: e.SEARCH_CONCURRENCY,
    rateLimits: e.RATE_LIMITS,
    mcpAllowedOrigins: e.MCP_ALLOWED_ORIGINS,
    trustProxy: e.TRUST_PROXY,
    searchQueueMax: e.SEARCH_QUEUE_MAX,
    searchQueueWaitMs: e.SEARCH_QUEUE_WAIT_MS,
    siteCardCron: e.SITE_CARD_CRON,
    populationCron: e.POPULATION_CRON,
    recomputeCron: e.RECOMPUTE_CRON,
    paymentsStuckAfterMs: e.PAYMENTS_STUCK_AFTER_MS,
  };
  if (production) assertProductionReady(config);
  assertStuckAfterLiveSettlement(config);
  return config;
}

/** Several PEM blocks in one variable (literal \n allowed, as many secret stores flatten newlines). */
function splitPems(value: string | undefined): string[] {
  if (!value) return [];
  const text = value.replace(/\\n/g, '\n');
  return text.match(/-----BEGIN [A-Z ]+-----[\s\S]+?-----END [A-Z ]+-----/g) ?? [];
}

/**
 * How long the built-in facilitator waits for its settlement's receipt: the `confirmationTimeoutMs`
 * it gives the x402 signer in src/domain/payments/facilitators.ts.
 */
const BUILTIN_RECEIPT_WAIT_MS = 30_000;
/** The built-in facilitator's chain calls before that wait (verification reads, simulation, fees, the send). */
const BUILTIN_BEFORE_SEND_MS = 10_000;
/** How far the clock of the process that marks a payment `settling` may be from the reconciler's. */
const CLOCK_SKEW_MS = 1_000;

/**
 * A request marks its payment `settling`, then waits for its facilitator's settle. The reconciler
 * must not take that payment while the request may still be waiting: it would send the same
 * authorization a second time, racing the first. A remote facilitator's call ends at
 * FACILITATOR_TIMEOUT_MS; the built-in one has no such deadline and, once it has sent the
 * transaction, waits up to its receipt timeout. So PAYMENTS_STUCK_AFTER_MS must exceed the longer
 * of the two among the facilitators configured, plus clock skew between processes.
 */
function assertStuckAfterLiveSettlement(c: Config): void {
  const bounds: Array<{ ms: number; why: string }> = [];
  if (c.chain.facilitatorUrls.length > 0) {
    bounds.push({
      ms: c.chain.facilitatorTimeoutMs,
      why: `FACILITATOR_TIMEOUT_MS is ${c.chain.facilitatorTimeoutMs} ms`,
    });
  }
  if (c.chain.facilitatorBuiltin) {
    bounds.push({
      ms: BUILTIN_BEFORE_SEND_MS + BUILTIN_RECEIPT_WAIT_MS,
      why: `the built-in facilitator (FACILITATOR_BUILTIN) takes up to ${BUILTIN_BEFORE_SEND_MS} ms to send, then waits up to ${BUILTIN_RECEIPT_WAIT_MS} ms for its receipt`,
    });
  }
  const longest = bounds.sort((a, b) => b.ms - a.ms)[0];
  if (!longest) return;
  const bound = longest.ms + CLOCK_SKEW_MS;
  if (c.paymentsStuckAfterMs <= bound) {
    throw new ConfigError([
      `PAYMENTS_STUCK_AFTER_MS (${c.paymentsStuckAfterMs}) must be greater than ${bound}: a request may still be settling a payment ` +
        `for ${longest.ms} ms (${longest.why}), plus ${CLOCK_SKEW_MS} ms of clock skew, and the reconciler would send it a second time`,
    ]);
  }
}

/**
 * Production never runs an embedded dev part: each of them is fine on a laptop and wrong
 * (data loss, fake money, public faucet) in front of real agents.
 */
function assertProductionReady(c: Config): void {
  const problems: string[] = [];
  const need = (ok: unknown, msg: string) => {
    if (!ok) problems.push(msg);
  };
  need(c.publicBaseUrl, 'PUBLIC_BASE_URL is required in production (documents link to it)');
  need(c.database.url, 'DATABASE_URL is required in production (embedded PGlite is for development)');
  need(c.redis.url, 'REDIS_URL is required in production (a spawned redis-server is for development)');
  need(
    c.s3.endpoint || c.s3.accessKeyId,
    'S3_ENDPOINT or S3 credentials are required in production (s3rver is for development)',
  );
  need(
    c.s3.accessKeyId && c.s3.secretAccessKey,
    'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are required in production',
  );
  need(c.chain.rpcUrl, 'RPC_URL is required in production (anvil is for development)');
  need(c.chain.chainId, 'CHAIN_ID is required in production');
  need(c.chain.usdcAddress, 'USDC_ADDRESS is required in production');
  need(c.chain.identityRegistryAddress, 'IDENTITY_REGISTRY_ADDRESS is required in production');
  need(c.chain.treasuryAddress, 'TREASURY_ADDRESS is required in production');
  need(
    (c.chain.facilitatorBuiltin && c.chain.facilitatorPrivateKey) || c.chain.facilitatorUrls.length > 0,
    'FACILITATOR_URLS or FACILITATOR_PRIVATE_KEY is required in production',
  );
  need(c.receiptPrivateKey, 'RECEIPT_PRIVATE_KEY is required in production (receipts must verify after a restart)');
  need(c.jwtPrivateKey, 'JWT_PRIVATE_KEY is required in production (an ephemeral key logs everyone out on restart)');
  need(c.adminToken, 'ADMIN_TOKEN is required in production (it guards /admin/queues)');
  if (c.faucetEnabled) problems.push('ENABLE_FAUCET must not be true in production');
  if (c.chain.chainId !== undefined && ![8453, 84532].includes(c.chain.chainId)) {
    problems.push(`CHAIN_ID ${c.chain.chainId} is not supported in production (8453 Base, 84532 Base Sepolia)`);
  }
  if (problems.length) throw new ConfigError(problems);
}
