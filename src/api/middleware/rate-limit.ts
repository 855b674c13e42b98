import type { RequestHandler } from 'express';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '../../platform/logger.js';
import { RATE_LIMIT_BUCKETS, RATE_LIMIT_WINDOW_SECONDS as WINDOW_SECONDS, type RateLimitBucket, type RateLimitPolicy } from '../../platform/rate-limit-policy.js';
import { sendProblem } from '../http/problem.js';

export type { RateLimitBucket };

/** A Redis command slower than this counts as Redis being down for the request at hand. */
const REDIS_TIMEOUT_MS = 250;

export interface RateLimits {
  middleware(bucket: RateLimitBucket): RequestHandler;
  close(): Promise<void>;
}

/**
 * Per-client limits shared by every API process through Redis. When Redis cannot answer (down, or
 * slower than REDIS_TIMEOUT_MS) each process falls back to its own in-memory limit of the same
 * size: the service degrades to per-process limits, neither refusing everyone nor letting
 * everything through. `policy` undefined turns limiting off (tests that drive load on purpose).
 */
export function createRateLimits(opts: { redisUrl: string; prefix: string; policy: RateLimitPolicy | undefined; log: Logger }): RateLimits {
  if (!opts.policy) return { middleware: () => (_req, _res, next) => next(), close: async () => undefined };
  const policy = opts.policy;
  // Its own connection: no offline queue, so a command during an outage fails at once instead of waiting.
  const client = new Redis(opts.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: REDIS_TIMEOUT_MS, lazyConnect: false });
  let warned = false;
  client.on('error', (err) => {
    if (!warned) opts.log.warn({ err: err.message }, 'rate limits: Redis unavailable; each process limits on its own until it returns');
    warned = true;
  });
  client.on('ready', () => (warned = false));

  const limiters = new Map<RateLimitBucket, RateLimiterRedis>();
  for (const bucket of RATE_LIMIT_BUCKETS) {
    limiters.set(
      bucket,
      new RateLimiterRedis({
        storeClient: client,
        keyPrefix: `${opts.prefix}:rl:${bucket}`,
        points: policy[bucket],
        duration: WINDOW_SECONDS,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ points: policy[bucket], duration: WINDOW_SECONDS }),
      }),
    );
  }

  return {
    middleware(bucket) {
      const limiter = limiters.get(bucket)!;
      const limit = policy[bucket];
      return async (req, res, next) => {
        const key = req.ip ?? req.socket.remoteAddress ?? 'unknown';
        try {
          const r = await limiter.consume(key);
          res.set({ 'RateLimit-Policy': `${limit};w=${WINDOW_SECONDS}`, RateLimit: `limit=${limit}, remaining=${r.remainingPoints}, reset=${Math.ceil(r.msBeforeNext / 1000)}` });
          next();
        } catch (err) {
          if (!(err instanceof RateLimiterRes)) {
            // Neither Redis nor the insurance limiter answered: let the request through rather than fail it.
            opts.log.warn({ err }, 'rate limit check failed; request allowed');
            next();
            return;
          }
          const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
          res.set({ 'Retry-After': String(retryAfter), 'RateLimit-Policy': `${limit};w=${WINDOW_SECONDS}`, RateLimit: `limit=${limit}, remaining=0, reset=${retryAfter}` });
          sendProblem(res, 429, 'rate_limited', `Too many ${bucket} requests from this address: at most ${limit} a minute; retry after ${retryAfter} s`);
        }
      };
    },
    async close() {
      await client.quit().catch(() => client.disconnect());
    },
  };
}
