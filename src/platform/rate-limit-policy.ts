/**
 * The routes that cost us (a chain call, a signature check, a search, a write, a payment to verify
 * and settle) or can be abused. `paid` counts paid reads (`GET /api/posts/{id}` with a payment
 * header or `view=full`) and every JSON-RPC message to `/mcp`.
 */
export const RATE_LIMIT_BUCKETS = ['challenge', 'verify', 'search', 'posting', 'faucet', 'paid'] as const;
export type RateLimitBucket = (typeof RATE_LIMIT_BUCKETS)[number];

/** Requests per client address per window, per bucket. */
export type RateLimitPolicy = Record<RateLimitBucket, number>;

export const RATE_LIMIT_WINDOW_SECONDS = 60;

export const DEFAULT_RATE_LIMITS: RateLimitPolicy = {
  challenge: 60,
  verify: 60,
  search: 600,
  posting: 300,
  faucet: 60,
  // Two paid reads or MCP messages a second, every second: far above what a buyer agent sends (a
  // purchase is two requests, an MCP purchase about five messages), far below what floods the
  // facilitators and the chain with verifications.
  paid: 120,
};

/**
 * RATE_LIMITS: `off`, or `bucket=n` pairs (`search=600,posting=30`) overriding the defaults;
 * unset means the defaults. Returns undefined for `off`; throws naming the bad pair.
 */
export function parseRateLimits(text: string | undefined): RateLimitPolicy | undefined {
  if (text === 'off') return undefined;
  const policy = { ...DEFAULT_RATE_LIMITS };
  for (const pair of (text ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, value] = pair.split('=');
    if (!RATE_LIMIT_BUCKETS.includes(name as RateLimitBucket) || !/^[1-9][0-9]{0,6}$/.test(value ?? '')) {
      throw new Error(`"${pair}" is not bucket=n with bucket one of ${RATE_LIMIT_BUCKETS.join(', ')}`);
    }
    policy[name as RateLimitBucket] = Number(value);
  }
  return policy;
}
