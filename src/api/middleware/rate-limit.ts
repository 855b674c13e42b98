import type { Request, RequestHandler, Response } from 'express';
import { isIPv6 } from 'node:net';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '../../platform/logger.js';
import {
  RATE_LIMIT_BUCKETS,
  RATE_LIMIT_WINDOW_SECONDS as WINDOW_SECONDS,
  type RateLimitBucket,
  type RateLimitPolicy,
} from '../../platform/rate-limit-policy.js';
import { withTimeout } from '../../platform/timeout.js';
import { HEADER_V1, HEADER_V2 } from '../http/x402-headers.js';
import { sendProblem } from '../http/problem.js';

export type { RateLimitBucket };

/** A Redis command slower than this counts as Redis being down for the request at hand. */
const REDIS_TIMEOUT_MS = 250;

/** The points a request takes from its bucket; 0 lets it through without counting it. */
export type RequestCost = (req: Request) => number;

const onePoint: RequestCost = () => 1;

/**
 * A paid read: a request that carries an x402 payment (X-PAYMENT or PAYMENT-SIGNATURE) or asks for
 * the full view, which is what costs a facilitator call, a chain call or a signature check. Preview
 * reads (crawlers, pages) are not counted.
 */
export const paidRead: RequestCost = (req) =>
  req.get(HEADER_V1) || req.get(HEADER_V2) || [req.query.view].flat().includes('full') ? 1 : 0;

/** What a request costs in a bucket unless its route says otherwise: one point, and in `paid` only paid reads. */
const BUCKET_COSTS: Partial<Record<RateLimitBucket, RequestCost>> = { paid: paidRead };

export interface RateLimits {
  /**
   * Counts each request against `bucket` before its route runs: `cost(req)` points, by default
   * the bucket's own rule (one point, and in `paid` only paid reads). 429 beyond the limit.
   */
  middleware(bucket: RateLimitBucket, cost?: RequestCost): RequestHandler;
  /**
   * Takes `points` from the client's `bucket`, for a route that knows what a request costs only
   * once it has read it (an MCP batch costs one point a message). Sets the RateLimit headers and
   * resolves true, or answers 429 itself and resolves false.
   */
  take(bucket: RateLimitBucket, points: number, req: Request, res: Response): Promise<boolean>;
  close(): Promise<void>;
}

/** After Redis failed to answer, the shared counters are skipped this long (no request waits on a dead Redis). */
const SUSPEND_AFTER_FAILURE_MS = 5_000;

/**
 * The address a client's requests are counted by. IPv6 clients are counted by their /64: one
 * subscriber usually holds a whole /64, and counting single addresses would give it 2^64 budgets.
 */
export function clientKey(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (v4mapped) return v4mapped;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Per-client limits shared by every API process through Redis. When Redis cannot answer (down, or
 * slower than REDIS_TIMEOUT_MS) each process counts on its own in memory, with the same limits,
 * for SUSPEND_AFTER_FAILURE_MS before it asks Redis again: the service degrades to per-process
 * limits, neither refusing everyone nor letting everything through, and no request waits on a
 * Redis that does not answer. `policy` undefined turns limiting off (load tests, the demo).
 */
export function createRateLimits(opts: {
  redisUrl: string;
  prefix: string;
  policy: RateLimitPolicy | undefined;
  log: Logger;
}): RateLimits {
  if (!opts.policy)
    return {
      middleware: () => (_req, _res, next) => next(),
      take: async () => true,
      close: async () => undefined,
    };
  const policy = opts.policy;
  // Its own connection: no offline queue, so a command during an outage fails at once instead of waiting.
  const client = new Redis(opts.redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: REDIS_TIMEOUT_MS,
    lazyConnect: false,
  });
  client.on('error', () => undefined);
  let suspendedUntil = 0;
  const suspend = (err: unknown) => {
    if (Date.now() >= suspendedUntil)
      opts.log.warn({ err }, 'rate limits: Redis did not answer; each process counts on its own for a few seconds');
    suspendedUntil = Date.now() + SUSPEND_AFTER_FAILURE_MS;
  };

  // One counter per bucket: in Redis, shared by every process, and in memory, used while Redis is away.
  const limiters = <L>(make: (bucket: RateLimitBucket) => L) =>
    Object.fromEntries(RATE_LIMIT_BUCKETS.map((b) => [b, make(b)])) as Record<RateLimitBucket, L>;
  const shared = limiters(
    (bucket) =>
      new RateLimiterRedis({
        storeClient: client,
        keyPrefix: `${opts.prefix}:rl:${bucket}`,
        points: policy[bucket],
        duration: WINDOW_SECONDS,
        rejectIfRedisNotReady: true,
      }),
  );
  const local = limiters((bucket) => new RateLimiterMemory({ points: policy[bucket], duration: WINDOW_SECONDS }));

  /** Takes `points`; resolves with the counter's state, rejects with RateLimiterRes when over the limit. */
  const consume = async (bucket: RateLimitBucket, key: string, points: number): Promise<RateLimiterRes> => {
    if (Date.now() >= suspendedUntil) {
      try {
        return await shared[bucket].consume(key, points);
      } catch (err) {
        if (err instanceof RateLimiterRes) throw err;
        suspend(err);
      }
    }
    return local[bucket].consume(key, points);
  };

  const take: RateLimits['take'] = async (bucket, points, req, res) => {
    const limit = policy[bucket];
    const policyHeader = `${limit};w=${WINDOW_SECONDS}`;
    try {
      const r = await consume(bucket, clientKey(req.ip ?? req.socket.remoteAddress), points);
      res.set({
        'RateLimit-Policy': policyHeader,
        RateLimit: `limit=${limit}, remaining=${r.remainingPoints}, reset=${Math.ceil(r.msBeforeNext / 1000)}`,
      });
      return true;
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) {
        // The in-memory counter failed, which is a bug of ours: let the request through rather than fail it.
        opts.log.error({ err }, 'rate limit check failed; request allowed');
        return true;
      }
      const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      res.set({
        'Retry-After': String(retryAfter),
        'RateLimit-Policy': policyHeader,
        RateLimit: `limit=${limit}, remaining=0, reset=${retryAfter}`,
      });
      sendProblem(
        res,
        429,
        'rate_limited',
        `Too many ${bucket} requests from this address: at most ${limit} a minute` +
          `${points > 1 ? ` (this request counts ${points})` : ''}; retry after ${retryAfter} s`,
      );
      return false;
    }
  };

  return {
    middleware(bucket, cost = BUCKET_COSTS[bucket] ?? onePoint) {
      return async (req, res, next) => {
        const points = cost(req);
        if (points <= 0) return next();
        if (await take(bucket, points, req, res)) next();
      };
    },
    take,
    async close() {
      await (client.status === 'ready'
        ? withTimeout(client.quit(), 500, 'QUIT').catch(() => client.disconnect())
        : client.disconnect());
    },
  };
}
