// 600 requests per 60 s per API key (DESIGN.md), counted in memory or, with REDIS_URL, in Redis so that every
// server process shares one budget. Every authenticated answer carries RateLimit-Policy and RateLimit.
import { createRequire } from 'node:module';
import type { NextFunction, Request, Response } from 'express';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { locals } from './context.ts';
import { Problem } from './problems.ts';

export const RATE_LIMIT = { requests: 600, windowSeconds: 60 } as const;

export interface RateLimitStore {
  limiter: RateLimiterAbstract;
  /**
   * A limiter of other limits in the same store (the widget's per-visitor and per-embed-key limits), made once per
   * name; with Redis it shares this store's connection.
   */
  limiterFor(name: string, limits: { points: number; duration: number }): RateLimiterAbstract;
  /** Answers when the store can count requests (for /readyz); undefined for memory. */
  ping?: () => Promise<void>;
  /**
   * Resolves when the store counts in the shared place (Redis connected), when connecting fails (Redis down: /readyz
   * says so, and the client keeps reconnecting), or after `timeoutMs`. Until Redis is connected every request is
   * counted by this process's insurance limiter, not in the budget all processes share.
   */
  ready?: (timeoutMs: number) => Promise<void>;
  close(): Promise<void>;
}

export function createRateLimitStore(redisUrl: string | undefined, keyPrefix = 'cs:rl'): RateLimitStore {
  const options = { points: RATE_LIMIT.requests, duration: RATE_LIMIT.windowSeconds, keyPrefix };
  const made = new Map<string, RateLimiterAbstract>();
  const once = (name: string, make: () => RateLimiterAbstract) => made.get(name) ?? made.set(name, make()).get(name)!;
  if (!redisUrl) {
    return {
      limiter: new RateLimiterMemory(options),
      limiterFor: (name, limits) =>
        once(name, () => new RateLimiterMemory({ ...limits, keyPrefix: `${keyPrefix}:${name}` })),
      close: async () => {},
    };
  }
  // The Redis client is loaded by a process that uses Redis only.
  const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const redis = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
  redis.on('error', () => {}); // reconnects on its own; a request meanwhile is counted by the insurance limiter
  const limiter = new RateLimiterRedis({
    ...options,
    storeClient: redis,
    // While Redis is unreachable, count in this process rather than refuse every request or count nothing.
    insuranceLimiter: new RateLimiterMemory(options),
  });
  return {
    limiter,
    limiterFor: (name, limits) =>
      once(
        name,
        () =>
          new RateLimiterRedis({
            ...limits,
            keyPrefix: `${keyPrefix}:${name}`,
            storeClient: redis,
            insuranceLimiter: new RateLimiterMemory({ ...limits, keyPrefix: `${keyPrefix}:${name}` }),
          }),
      ),
    ping: async () => {
      await redis.ping();
    },
    ready: async (timeoutMs) => {
      if (redis.status === 'ready') return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => redis.once('ready', () => resolve())),
        new Promise<void>((resolve) => redis.once('error', () => resolve())),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    },
    close: async () => {
      redis.disconnect();
    },
  };
}

const policy = `"default";q=${RATE_LIMIT.requests};w=${RATE_LIMIT.windowSeconds}`;

export function rateLimit(store: RateLimitStore) {
  return async (_req: Request, res: Response, next: NextFunction): Promise<void> => {
    const caller = locals(res).caller!;
    res.setHeader('RateLimit-Policy', policy);
    let outcome: RateLimiterRes;
    try {
      outcome = await store.limiter.consume(caller.apiKey.id);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      res.setHeader('RateLimit', `"default";r=0;t=${seconds}`);
      throw new Problem(
        'rate_limited',
        `More than ${RATE_LIMIT.requests} requests in ${RATE_LIMIT.windowSeconds} seconds with this key; retry in ${seconds} s.`,
        {
          headers: { 'Retry-After': String(seconds) },
        },
      );
    }
    res.setHeader(
      'RateLimit',
      `"default";r=${outcome.remainingPoints};t=${Math.max(0, Math.ceil(outcome.msBeforeNext / 1000))}`,
    );
    next();
  };
}

/**
 * Counts one request against a budget of `limit.points` requests per `limit.window` seconds under `key`, and answers
 * the RateLimit headers; over budget, a `rate_limited` problem with Retry-After. `who` ends the problem's sentence
 * ("from this address").
 */
export async function consumeBudget(
  limiter: RateLimiterAbstract,
  key: string,
  limit: { points: number; window: number; who: string },
): Promise<Record<string, string>> {
  const policy = `"default";q=${limit.points};w=${limit.window}`;
  try {
    const outcome = await limiter.consume(key);
    return {
      'RateLimit-Policy': policy,
      RateLimit: `"default";r=${outcome.remainingPoints};t=${Math.max(0, Math.ceil(outcome.msBeforeNext / 1000))}`,
    };
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    throw new Problem(
      'rate_limited',
      `More than ${limit.points} requests in ${limit.window} seconds ${limit.who}; retry in ${seconds} s.`,
      {
        headers: {
          'Retry-After': String(seconds),
          'RateLimit-Policy': policy,
          RateLimit: `"default";r=0;t=${seconds}`,
        },
      },
    );
  }
}

/** The budget of the public addresses (public documents, transcript links): 600 requests a minute per client IP. */
export function consumePublicBudget(store: RateLimitStore, ip: string): Promise<Record<string, string>> {
  return consumeBudget(store.limiter, `public-ip:${ip}`, {
    points: RATE_LIMIT.requests,
    window: RATE_LIMIT.windowSeconds,
    who: 'from this address',
  });
}
