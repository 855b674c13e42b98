import { z } from 'zod';
import { parsePreviousCardKeys } from './card-keys.js';
import { DEFAULT_RATE_LIMITS, parseRateLimits } from './rate-limit-policy.js';
import { parseOrigins } from './allowed-origins.js';

/**
 * The only module that reads `process.env`. Every variable is declared once, in `DECLARATION`
 * below: its name, its schema, its default, its line in docs/configuration.md, its group and
 * whether production requires it. The `Config` type, the parsing, the production checks and the
 * docs table (`npm run docs:config`) all follow from that entry, so they cannot drift apart.
 *
 * Every variable is validated once at start; a production deployment that still points at an
 * embedded dev part, or lacks a secret, refuses to start (see `assertProductionReady`).
 */

/** The groups docs/configuration.md lists the variables under, in this order, with their headings. */
export const CONFIG_GROUPS = {
  service: 'Service',
  database: 'Database',
  queues: 'Redis, queues and schedules',
  bucket: 'Bucket',
  chain: 'Chain',
  payments: 'Payments',
  security: 'Keys and access',
  limits: 'Limits',
} as const;
export type ConfigGroup = keyof typeof CONFIG_GROUPS;

interface About {
  group: ConfigGroup;
  /** One line for docs/configuration.md: what the variable does. */
  doc: string;
  /** Production refuses to start without it; a text says why, in the refusal and in the docs. */
  required?: true | string;
}

/** One environment variable: how its text becomes a `Config` value, and what the docs say of it. */
class Variable<T> {
  constructor(
    readonly env: string,
    /** Parses the value as set (undefined when unset or empty). */
    readonly schema: z.ZodType<T>,
    readonly about: About,
    /** The default as the docs show it. */
    readonly shownDefault: string,
    /** The value when unset, where it differs between production and development. */
    readonly whenUnset?: (production: boolean) => T,
  ) {}
}

const code = (value: unknown) => `\`${String(value)}\``;

/** A variable with a default value; the docs show the value unless `shown` says it better. */
function withDefault<S extends z.ZodType>(
  env: string,
  schema: S,
  value: z.output<S>,
  about: About & { shown?: string },
): Variable<z.output<S>> {
  return new Variable(env, schema.default(value as never) as z.ZodType<z.output<S>>, about, about.shown ?? code(value));
}

/** A variable that may stay unset (undefined in `Config`); `unset` says in the docs what happens then. */
function optional<S extends z.ZodType>(
  env: string,
  schema: S,
  about: About & { unset: string },
): Variable<z.output<S> | undefined> {
  return new Variable(env, schema.optional(), about, about.unset);
}

/**
 * A variable read by a parser of its own, which also gives the value when unset (`shown` in the
 * docs); what the parser throws becomes a validation problem naming the variable.
 */
function parsed<T>(env: string, parse: (text: string | undefined) => T, about: About & { shown: string }): Variable<T> {
  const schema = z
    .string()
    .optional()
    .transform((text, ctx) => {
      try {
        return parse(text);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });
  return new Variable(env, schema, about, about.shown);
}

/** A variable whose value when unset depends on whether this is production. */
function byEnvironment<S extends z.ZodType<boolean>>(
  env: string,
  schema: S,
  values: { development: boolean; production: boolean },
  about: About,
): Variable<boolean> {
  return new Variable<boolean>(
    env,
    schema.optional() as z.ZodType<boolean>,
    about,
    `${code(values.development)} in development, ${code(values.production)} in production`,
    (production) => (production ? values.production : values.development),
  );
}

const booleanish = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const hex = (bytes: number) =>
  z
    .string()
    .regex(new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`))
    .transform((v) => v as `0x${string}`);

const commaList = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Several PEM blocks in one variable (literal \n allowed, as many secret stores flatten newlines). */
function splitPems(value: string): string[] {
  const text = value.replace(/\\n/g, '\n');
  return text.match(/-----BEGIN [A-Z ]+-----[\s\S]+?-----END [A-Z ]+-----/g) ?? [];
}

/**
 * The /metrics port of each role that runs no API, when METRICS_PORT is unset: next to the
 * Prometheus exporters' own range, and different per role so a worker and the scheduler can share a host.
 */
export const DEFAULT_METRICS_PORTS = { worker: 9464, scheduler: 9465 } as const;

const port = () => z.coerce.number().int().min(0).max(65535);
const int = (min: number, max?: number) => {
  const n = z.coerce.number().int().min(min);
  return max === undefined ? n : n.max(max);
};

/** Every variable, at the place its value takes in `Config`. */
const DECLARATION = {
  env: withDefault('NODE_ENV', z.enum(['development', 'test', 'production']), 'development', {
    group: 'service',
    doc: '`production` turns on the production checks and turns off the faucet and bucket serving',
  }),
  port: withDefault('PORT', port(), 3000, { group: 'service', doc: 'where the API listens' }),
  host: withDefault('HOST', z.string(), '127.0.0.1', {
    group: 'service',
    doc: 'the address the API listens on (use `0.0.0.0` in containers)',
  }),
  /** METRICS_PORT as set; `metricsPortOf` gives the port a role listens on. */
  metricsPort: optional('METRICS_PORT', port(), {
    group: 'service',
    unset: `${code(DEFAULT_METRICS_PORTS.worker)} for \`worker\`, ${code(DEFAULT_METRICS_PORTS.scheduler)} for \`scheduler\``,
    doc: 'where a worker or scheduler process serves its own `/metrics` (admin token); `0` picks a free port; processes of those roles sharing a host need one each; the API serves `/metrics` on `PORT`',
  }),
  /** Public base URL the documents link to; derived from HOST/PORT when unset (embedded mode). */
  publicBaseUrl: optional(
    'PUBLIC_BASE_URL',
    z.url().transform((url) => url.replace(/\/+$/, '')),
    {
      group: 'service',
      unset: '`http://localhost:$PORT`',
      required: 'documents link to it',
      doc: 'the public origin documents link to (the CDN’s)',
    },
  ),
  logLevel: withDefault('LOG_LEVEL', z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info', {
    group: 'service',
    doc: 'pino level (`silent` … `trace`)',
  }),
  dataDir: withDefault('DATA_DIR', z.string(), '.data', {
    group: 'service',
    doc: 'embedded PGlite and s3rver files, and the development keys in `keys/` (unused in production)',
  }),
  database: {
    url: optional('DATABASE_URL', z.string(), {
      group: 'database',
      unset: 'embedded PGlite',
      required: 'embedded PGlite is for development',
      doc: 'PostgreSQL 15+ connection string',
    }),
    poolMax: withDefault('DATABASE_POOL_MAX', int(1, 200), 10, { group: 'database', doc: 'connections per process' }),
    connectTimeoutMs: withDefault('DATABASE_CONNECT_TIMEOUT_MS', int(100), 5_000, {
      group: 'database',
      doc: 'longest wait for a database connection (a new one, or a free one from a full pool) before 503',
    }),
    statementTimeoutMs: withDefault('DATABASE_STATEMENT_TIMEOUT_MS', int(100), 30_000, {
      group: 'database',
      doc: '`statement_timeout` of every session; batch jobs raise it for their own statements',
    }),
    largeResultRows: withDefault('DATABASE_LARGE_RESULT_ROWS', int(1), 5_000, {
      group: 'database',
      doc: 'a statement that returns more rows than this is logged (warn, `large database result`) with its SQL: every read is meant to be paged or bounded',
    }),
    largeScanRows: optional('DATABASE_LARGE_SCAN_ROWS', int(1), {
      group: 'database',
      unset: 'off',
      doc: 'a checking mode for the scale smoke test, not for production: every statement is run with `auto_explain` (its plan with row counts sent back to this process), and a sequential scan that reads more rows than this is logged (warn, `large sequential scan`) with its table and SQL. Needs the `auto_explain` module and a role allowed to LOAD it',
    }),
  },
  redis: {
    url: optional('REDIS_URL', z.string(), {
      group: 'queues',
      unset: '127.0.0.1:6379 if it answers, else a spawned `redis-server`',
      required: 'a spawned redis-server is for development',
      doc: 'Redis for BullMQ',
    }),
    prefix: withDefault('QUEUE_PREFIX', z.string().regex(/^[A-Za-z0-9_{}-]+$/), 'market', {
      group: 'queues',
      doc: 'BullMQ key prefix; use a hash tag (`{market}`) on Redis Cluster',
    }),
  },
  s3: {
    endpoint: optional('S3_ENDPOINT', z.url(), {
      group: 'bucket',
      unset: 'embedded s3rver',
      doc: 'S3, R2 or MinIO endpoint (omit for AWS S3 with credentials)',
    }),
    region: withDefault('S3_REGION', z.string(), 'us-east-1', {
      group: 'bucket',
      doc: 'the public documents bucket’s region',
    }),
    bucket: withDefault('S3_BUCKET', z.string(), 'market-public', {
      group: 'bucket',
      doc: 'the public documents bucket',
    }),
    accessKeyId: optional('S3_ACCESS_KEY_ID', z.string(), {
      group: 'bucket',
      unset: 's3rver’s',
      doc: 'the bucket’s access key',
    }),
    secretAccessKey: optional('S3_SECRET_ACCESS_KEY', z.string(), {
      group: 'bucket',
      unset: 's3rver’s',
      doc: 'the bucket’s secret key',
    }),
    forcePathStyle: withDefault('S3_FORCE_PATH_STYLE', booleanish, true, {
      group: 'bucket',
      doc: '`false` for virtual-hosted buckets',
    }),
  },
  // Without a CDN in front, someone has to answer the static paths: by default the API does
  // in dev, and in production only when asked to (a CDN normally routes them to the bucket).
  serveBucket: byEnvironment(
    'SERVE_BUCKET',
    booleanish,
    { development: true, production: false },
    {
      group: 'bucket',
      doc: 'the API also serves bucket objects at their public paths (no CDN in front)',
    },
  ),
  chain: {
    rpcUrl: optional('RPC_URL', z.url(), {
      group: 'chain',
      unset: 'embedded anvil',
      required: 'anvil is for development',
      doc: 'Base (8453) or Base Sepolia (84532) RPC',
    }),
    chainId: optional('CHAIN_ID', z.coerce.number().int().positive(), {
      group: 'chain',
      unset: '`84532` on embedded anvil',
      required: true,
      doc: 'the chain the RPC serves',
    }),
    usdcAddress: optional('USDC_ADDRESS', hex(20), {
      group: 'chain',
      unset: 'deployed on anvil',
      required: true,
      doc: 'the USDC contract (its EIP-712 name and version are read from it)',
    }),
    identityRegistryAddress: optional('IDENTITY_REGISTRY_ADDRESS', hex(20), {
      group: 'chain',
      unset: 'deployed on anvil',
      required: true,
      doc: 'the ERC-8004 IdentityRegistry',
    }),
    reputationRegistryAddress: optional('REPUTATION_REGISTRY_ADDRESS', hex(20), {
      group: 'chain',
      unset: 'deployed on anvil; none on a configured chain',
      doc: 'the ERC-8004 ReputationRegistry (canonical: `0x8004BAa17C55a88189AE136b182e5fdA19dE9b63` on mainnets, `0x8004B663056A597Dffe9eCcC1965A193B7388713` on testnets)',
    }),
    reputationConfirmations: optional('REPUTATION_CONFIRMATIONS', int(0, 1_000), {
      group: 'chain',
      unset: '0 on embedded anvil, else 2',
      doc: 'blocks on top of a Reputation Registry event before the feedback follower indexes it',
    }),
    reputationStartBlock: optional('REPUTATION_START_BLOCK', z.coerce.bigint().nonnegative(), {
      group: 'chain',
      unset: 'block 0 on embedded anvil, else the confirmed head at the first start',
      doc: 'where the feedback follower starts reading the Reputation Registry the first time',
    }),
    treasuryAddress: optional('TREASURY_ADDRESS', hex(20), {
      group: 'payments',
      unset: 'anvil account 2',
      required: true,
      doc: 'receives registration fees',
    }),
    facilitatorPrivateKey: optional('FACILITATOR_PRIVATE_KEY', hex(32), {
      group: 'payments',
      unset: 'anvil account 1',
      doc: 'key of the built-in facilitator (pays settlement gas)',
    }),
    facilitatorUrls: parsed('FACILITATOR_URLS', (text) => commaList(text ?? ''), {
      shown: 'none',
      group: 'payments',
      doc: 'comma-separated remote x402 facilitators, tried in order',
    }),
    /** Receipt polling of the built-in facilitator; default 10 ms on embedded anvil, 250 ms otherwise. */
    pollIntervalMs: optional('CHAIN_POLL_INTERVAL_MS', int(5, 60_000), {
      group: 'chain',
      unset: '10 on embedded anvil, else 250',
      doc: 'how often the built-in facilitator polls for a settlement receipt',
    }),
    /** Authorizations per settlement transaction of the built-in facilitator; 0 is one per payment, unbatched. */
    settlementBatchMax: withDefault('SETTLEMENT_BATCH_MAX', int(0, 200), 50, {
      group: 'payments',
      doc: 'the most authorizations the built-in facilitator settles in one transaction (Multicall3); `0` settles each payment in a transaction of its own through the official exact scheme ([payments](payments.md#settlement-batches-the-built-in-facilitator))',
    }),
    /** Run the built-in facilitator (needs a facilitator key; the embedded chain has one). */
    facilitatorBuiltin: withDefault('FACILITATOR_BUILTIN', booleanish, true, {
      group: 'payments',
      doc: 'run the built-in facilitator (needs `FACILITATOR_PRIVATE_KEY`; embedded chain has one), after the remote ones',
    }),
    facilitatorTimeoutMs: withDefault('FACILITATOR_TIMEOUT_MS', int(100, 120_000), 10_000, {
      group: 'payments',
      doc: 'per call to a remote facilitator',
    }),
    facilitatorFailureThreshold: withDefault('FACILITATOR_FAILURE_THRESHOLD', int(1, 100), 3, {
      group: 'payments',
      doc: 'consecutive failures that open a facilitator’s circuit breaker',
    }),
    facilitatorHalfOpenMs: withDefault('FACILITATOR_HALF_OPEN_MS', int(100, 600_000), 15_000, {
      group: 'payments',
      doc: 'how long an open breaker waits before a trial call (also the 503’s Retry-After)',
    }),
  },
  faucetEnabled: byEnvironment(
    'ENABLE_FAUCET',
    booleanish,
    { development: true, production: false },
    { group: 'payments', doc: '`POST /dev/faucet`: test USDC and gas for any wallet' },
  ),
  jwtPrivateKey: optional(
    'JWT_PRIVATE_KEY',
    z.string().transform((pem) => pem.replace(/\\n/g, '\n')),
    {
      group: 'security',
      unset: 'generated once, kept in `DATA_DIR/keys`',
      required: 'an ephemeral key logs everyone out on restart',
      doc: 'EC P-256 private key (PEM; `\\n` escapes allowed) signing agent JWTs (ES256)',
    },
  ),
  x402Extensions: withDefault('X402_EXTENSIONS', booleanish, true, {
    group: 'payments',
    doc: 'paid routes speak the x402 v2 extensions (Bazaar, Sign-In-With-X, payment-identifier, offer-receipt); `false` answers plain x402, what bench/paid-requests.ts compares against (docs/payments.md)',
  }),
  receiptPrivateKey: optional('RECEIPT_PRIVATE_KEY', hex(32), {
    group: 'security',
    unset: 'generated once, kept in `DATA_DIR/keys`',
    required: 'receipts must verify after a restart',
    doc: 'secp256k1 key (0x + 64 hex) signing x402 `offer-receipt` receipts (EIP-712); its address is published in the site AgentCard and `/.well-known/x402`',
  }),
  cardSigningKey: optional(
    'CARD_SIGNING_KEY',
    z.string().transform((pem) => pem.replace(/\\n/g, '\n')),
    {
      group: 'security',
      unset: 'generated once, kept in `DATA_DIR/keys`',
      required: 'published AgentCards must verify after a restart',
      doc: 'Ed25519 private key (PKCS#8 PEM; `\\n` escapes allowed) signing every published A2A AgentCard (JWS `EdDSA`); its public key is in `/.well-known/jwks.json` (docs/a2a.md)',
    },
  ),
  cardPreviousKeys: parsed('CARD_PREVIOUS_KEYS', (text) => parsePreviousCardKeys(text), {
    shown: 'none',
    group: 'security',
    doc: 'JSON array `[{"jwk": {Ed25519 public JWK with kid}, "retireAfter": "<ISO time>"}]`: card keys of before a rotation, listed in `/.well-known/jwks.json` until `retireAfter`',
  }),
  treasuryOwnershipProof: optional(
    'TREASURY_OWNERSHIP_PROOF',
    z
      .string()
      .regex(/^0x([0-9a-fA-F]{2})+$/)
      .transform((v) => v as `0x${string}`),
    {
      group: 'payments',
      unset: 'signed at start on the embedded chain',
      doc: 'the public origin (`PUBLIC_BASE_URL`) signed with the treasury key (EIP-191), listed in `/.well-known/x402` as the registration’s ownership proof; without it registration is listed unproven',
    },
  ),
  jwtPreviousPublicKeys: parsed('JWT_PREVIOUS_PUBLIC_KEYS', (text) => splitPems(text ?? ''), {
    shown: 'none',
    group: 'security',
    doc: 'PEM public keys still accepted after a rotation, until their tokens expire',
  }),
  jwtTtlSeconds: withDefault('JWT_TTL_SECONDS', int(60, 30 * 86_400), 86_400, {
    group: 'security',
    doc: 'agent token lifetime',
  }),
  adminToken: optional('ADMIN_TOKEN', z.string().min(16), {
    group: 'security',
    unset: 'generated once, kept in `DATA_DIR/keys`, printed at start',
    required: 'it guards /admin/queues',
    doc: '16+ characters: guards `/admin/queues` and `/metrics`',
  }),
  bodyLimit: withDefault('BODY_LIMIT', z.string().regex(/^\d+(b|kb|mb)$/i), '256kb', {
    group: 'limits',
    doc: 'largest JSON body; larger gets 413',
  }),
  /** The least a paid skill may cost, in atomic USDC (MIN_PRICE_ATOMIC); a lower non-zero price is refused. */
  minPriceAtomic: withDefault('MIN_PRICE_ATOMIC', z.coerce.bigint().min(0n).max(1_000_000_000n), 10_000n, {
    group: 'limits',
    shown: '`10000` (0.01 USDC)',
    doc: 'the least a paid skill may cost, in atomic USDC; a lower non-zero price gets 422 `price_below_minimum`, 0 (free) is always allowed; the default is about three times a sale’s settlement gas on Base ([security](security.md#prices-and-wash-trading))',
  }),
  workerConcurrency: withDefault('WORKER_CONCURRENCY', int(1, 64), 4, {
    group: 'queues',
    doc: 'jobs each worker process runs at once per queue',
  }),
  /** Searches one API process computes at once; the rest wait their turn, in order (docs/discovery.md). */
  searchConcurrency: withDefault('SEARCH_CONCURRENCY', int(1, 64), 4, {
    group: 'limits',
    doc: 'searches each API process computes at once; the rest wait in order (docs/discovery.md, Search step 8)',
  }),
  /** Express's `trust proxy`: which hops may name the client (TRUST_PROXY). */
  trustProxy: withDefault(
    'TRUST_PROXY',
    z
      .string()
      .refine(
        (v) => v !== 'true',
        'must not be true (any client could then choose its own address); give a hop count or addresses',
      )
      .transform((v): boolean | number | string => (v === 'false' ? false : /^\d+$/.test(v) ? Number(v) : v)),
    false,
    {
      group: 'security',
      // Trusting every hop would let any client pick the address its rate limits are counted by.
      doc: 'which proxies may name the client in `X-Forwarded-For` (rate limits count by it): `false`, a hop count (`1` behind one edge), or addresses and CIDRs (`loopback, 10.0.0.0/8`); `true` is refused',
    },
  ),
  /** Requests per client address a minute on the costly routes; undefined when limits are off. */
  rateLimits: parsed('RATE_LIMITS', parseRateLimits, {
    group: 'limits',
    shown: code(
      Object.entries(DEFAULT_RATE_LIMITS)
        .map(([bucket, n]) => `${bucket}=${n}`)
        .join(','),
    ),
    doc: 'per-client requests a minute on costly routes: `off`, or `bucket=n` pairs over the defaults (`paid`: reads of a skill that pay or ask for `view=full`, and each JSON-RPC message to `/mcp`); beyond them 429 `rate_limited` (docs/operations.md)',
  }),
  /** Browser origins the MCP endpoint accepts besides the public one (MCP_ALLOWED_ORIGINS). */
  mcpAllowedOrigins: parsed('MCP_ALLOWED_ORIGINS', parseOrigins, {
    shown: 'none',
    group: 'security',
    doc: 'comma-separated browser origins (`https://app.example`) allowed to call `/mcp` besides `PUBLIC_BASE_URL`’s; requests without `Origin` (agents) always are, `http://localhost:*`, `127.0.0.1` and `[::1]` pages only in development and test; any other `Origin` gets 403 `origin_not_allowed`',
  }),
  /** Searches allowed to wait; beyond this a search is answered 503 with Retry-After. */
  searchQueueMax: withDefault('SEARCH_QUEUE_MAX', int(0, 100_000), 1000, {
    group: 'limits',
    doc: 'searches allowed to wait per API process; beyond it 503 `search_busy` with `Retry-After: 1`',
  }),
  /** How long a search may wait for a slot before it is answered 503 (its client has likely given up). */
  searchQueueWaitMs: withDefault('SEARCH_QUEUE_WAIT_MS', int(10, 120_000), 10_000, {
    group: 'limits',
    doc: 'longest a search waits for its turn; then 503 `search_busy`',
  }),
  shutdownTimeoutMs: withDefault('SHUTDOWN_TIMEOUT_MS', int(100, 60_000), 8000, {
    group: 'service',
    doc: 'hard deadline for a clean stop',
  }),
  siteCardCron: withDefault('SITE_CARD_CRON', z.string(), '*/5 * * * *', {
    group: 'queues',
    doc: 'when the site card and the methodology specs are re-rendered (also at start)',
  }),
  populationCron: withDefault('POPULATION_CRON', z.string(), '*/15 * * * *', {
    group: 'queues',
    doc: 'when the population quantiles behind percentile score components are recomputed (also at start)',
  }),
  recomputeCron: withDefault('RECOMPUTE_CRON', z.string(), '17 3 * * *', {
    group: 'queues',
    doc: 'the daily recompute of every agent’s documents',
  }),
  /** How often an API process adds its seller-analytics counters to the database (docs/analytics.md). */
  analyticsFlushMs: withDefault('ANALYTICS_FLUSH_MS', int(100, 60_000), 5_000, {
    group: 'queues',
    doc: 'how often each API process adds the manifest views, 402 challenges and deliveries it counted to the database, one statement per flush; a crash loses at most this long of counts ([analytics](analytics.md))',
  }),
  /** In flight longer than this, a payment is stuck, not a request in progress (the reconciler's threshold). */
  paymentsStuckAfterMs: withDefault('PAYMENTS_STUCK_AFTER_MS', int(1_000, 3_600_000), 60_000, {
    group: 'payments',
    doc: 'how old an in-flight payment must be before the reconciler resolves it from the chain; must exceed the longest a live request may still be settling (`FACILITATOR_TIMEOUT_MS` for remote facilitators, 40 s with the built-in one, plus 1 s), or the service refuses to start',
  }),
  /** How long after a purchase its buyer may ask for a refund (docs/refunds.md). */
  refundWindowDays: withDefault('REFUND_WINDOW_DAYS', int(0, 3650), 14, {
    group: 'payments',
    doc: 'how many days after a purchase its buyer may request a refund; later requests get 409 `refund_window_closed`, `0` takes none; a seller may refund at any time ([refunds](refunds.md))',
  }),
  /** Webhook deliveries (docs/webhooks.md): where they may go, how long an attempt lasts, how they are retried. */
  webhooks: {
    allowLoopback: byEnvironment(
      'WEBHOOK_ALLOW_LOOPBACK',
      booleanish,
      { development: true, production: false },
      {
        group: 'security',
        doc: 'webhook endpoints may be `http://` on a loopback address (a receiver on this machine, `skill-market webhooks listen`); production refuses to start with it on; private and link-local addresses are refused either way ([webhooks](webhooks.md))',
      },
    ),
    timeoutMs: withDefault('WEBHOOK_TIMEOUT_MS', int(100, 60_000), 10_000, {
      group: 'limits',
      doc: 'the longest one webhook delivery attempt lasts (connect, send, answer); then it counts as failed and is retried',
    }),
    retryBaseMs: withDefault('WEBHOOK_RETRY_BASE_MS', int(10, 3_600_000), 30_000, {
      group: 'queues',
      doc: 'the first webhook retry’s delay; each next one doubles, up to 1,440 times this (12 h), each within ±20 % ([webhooks](webhooks.md#retries))',
    }),
    maxAttempts: withDefault('WEBHOOK_MAX_ATTEMPTS', int(1, 30), 17, {
      group: 'queues',
      doc: 'webhook delivery attempts in all; after the last fails (about three days with the defaults) the endpoint is disabled',
    }),
  },
};

type Declaration = { readonly [key: string]: Variable<unknown> | Declaration };
type ValuesOf<D> = { -readonly [K in keyof D]: D[K] extends Variable<infer T> ? T : ValuesOf<D[K]> };

export type Config = ValuesOf<typeof DECLARATION> & { production: boolean };

function variablesOf(declaration: Declaration): Variable<unknown>[] {
  return Object.values(declaration).flatMap((entry) => (entry instanceof Variable ? [entry] : variablesOf(entry)));
}
const VARIABLES = variablesOf(DECLARATION);

/** The schema of the environment: one key per variable, in declaration order. */
export const EnvSchema = z.object(Object.fromEntries(VARIABLES.map((v) => [v.env, v.schema])));

function valuesOf(
  declaration: Declaration,
  env: Record<string, unknown>,
  production: boolean,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(declaration).map(([key, entry]) => [
      key,
      entry instanceof Variable ? (env[entry.env] ?? entry.whenUnset?.(production)) : valuesOf(entry, env, production),
    ]),
  );
}

/**
 * Production checks that span variables, listed with the last of the variables they name. A
 * variable production simply requires says so in its own entry (`required`).
 */
interface ProductionRule {
  vars: readonly string[];
  /** What production needs, as the docs table says it. */
  doc: string;
  problem: (c: Config) => string | undefined;
}

const PRODUCTION_RULES: readonly ProductionRule[] = [
  {
    vars: ['WEBHOOK_ALLOW_LOOPBACK'],
    doc: 'must be `false`',
    problem: (c) =>
      c.webhooks.allowLoopback
        ? 'WEBHOOK_ALLOW_LOOPBACK must be false in production: endpoints chosen by agents could reach this host'
        : undefined,
  },
  {
    vars: ['S3_ENDPOINT', 'S3_ACCESS_KEY_ID'],
    doc: 'required: `S3_ENDPOINT` or S3 credentials',
    problem: (c) =>
      c.s3.endpoint || c.s3.accessKeyId
        ? undefined
        : 'S3_ENDPOINT or S3 credentials are required in production (s3rver is for development)',
  },
  {
    vars: ['S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'],
    doc: 'required: `S3_ACCESS_KEY_ID` and `S3_SECRET_ACCESS_KEY`',
    problem: (c) =>
      c.s3.accessKeyId && c.s3.secretAccessKey
        ? undefined
        : 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are required in production',
  },
  {
    vars: ['FACILITATOR_PRIVATE_KEY', 'FACILITATOR_URLS', 'FACILITATOR_BUILTIN'],
    doc: 'required: `FACILITATOR_URLS`, or `FACILITATOR_PRIVATE_KEY` with `FACILITATOR_BUILTIN`',
    problem: (c) =>
      (c.chain.facilitatorBuiltin && c.chain.facilitatorPrivateKey) || c.chain.facilitatorUrls.length > 0
        ? undefined
        : 'FACILITATOR_URLS or FACILITATOR_PRIVATE_KEY is required in production',
  },
  {
    vars: ['CHAIN_ID'],
    doc: '`8453` (Base) or `84532` (Base Sepolia)',
    problem: (c) =>
      c.chain.chainId !== undefined && ![8453, 84532].includes(c.chain.chainId)
        ? `CHAIN_ID ${c.chain.chainId} is not supported in production (8453 Base, 84532 Base Sepolia)`
        : undefined,
  },
  {
    vars: ['ENABLE_FAUCET'],
    doc: 'must not be `true`',
    problem: (c) => (c.faucetEnabled ? 'ENABLE_FAUCET must not be true in production' : undefined),
  },
];

/** `required`, and why when the entry says. */
const requiredText = (v: Variable<unknown>) =>
  typeof v.about.required === 'string' ? `required (${v.about.required})` : 'required';

/** One row of the docs table of docs/configuration.md (scripts/config-docs.ts writes the table). */
export interface ConfigVariableDoc {
  env: string;
  group: ConfigGroup;
  default: string;
  /** What production needs of it, or an empty string. */
  production: string;
  doc: string;
}

/** Every variable as docs/configuration.md lists it, in declaration order. */
export function configVariableDocs(): ConfigVariableDoc[] {
  const known = new Set(VARIABLES.map((v) => v.env));
  for (const rule of PRODUCTION_RULES) {
    const unknown = rule.vars.filter((name) => !known.has(name));
    if (unknown.length) throw new Error(`a production rule names undeclared variables: ${unknown.join(', ')}`);
  }
  return VARIABLES.map((v) => ({
    env: v.env,
    group: v.about.group,
    default: v.shownDefault,
    production: [
      ...(v.about.required === undefined ? [] : [requiredText(v)]),
      ...PRODUCTION_RULES.filter((rule) => rule.vars.includes(v.env)).map((rule) => rule.doc),
    ].join('; '),
    doc: v.about.doc,
  }));
}

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
  const production = parsed.data.NODE_ENV === 'production';
  const config = { ...valuesOf(DECLARATION, parsed.data, production), production } as Config;
  if (production) assertProductionReady(config, parsed.data);
  return config;
}

/**
 * Production never runs an embedded dev part: each of them is fine on a laptop and wrong
 * (data loss, fake money, public faucet) in front of real agents. Each problem is listed at the
 * variable it concerns, in declaration order.
 */
function assertProductionReady(c: Config, env: Record<string, unknown>): void {
  const problems: string[] = [];
  const position = new Map(VARIABLES.map((v, i) => [v.env, i]));
  const at = (rule: ProductionRule) => Math.max(...rule.vars.map((name) => position.get(name) ?? -1));
  VARIABLES.forEach((v, i) => {
    if (v.about.required !== undefined && env[v.env] === undefined) {
      problems.push(`${v.env} is ${requiredText(v).replace('required', 'required in production')}`);
    }
    for (const rule of PRODUCTION_RULES.filter((r) => at(r) === i)) {
      const problem = rule.problem(c);
      if (problem) problems.push(problem);
    }
  });
  if (problems.length) throw new ConfigError(problems);
}
