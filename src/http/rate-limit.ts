/**
 * Per-client rate limits in three tiers (decisions.md): a fixed one-minute window per client
 * and tier, counted in memory or, when instances share Redis, in Redis.
 *
 * Answers carry the IETF structured fields (draft-ietf-httpapi-ratelimit-headers):
 *   RateLimit-Policy: "status";q=120;w=60
 *   RateLimit: "status";r=87;t=42
 * and a 429 adds Retry-After. The key is the client's opaque hash (ClientHasher), never an IP.
 *
 * Hand-written rather than @fastify/rate-limit: that plugin only emits the older draft's
 * RateLimit-Limit/-Remaining/-Reset headers (rewriting them cost a sixth of a cached status
 * answer), and a fixed window is a few lines in memory and one MULTI in Redis.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { ClientHasher } from '../core/client-hash.js';
import { ObserverError } from '../core/errors.js';
import { clientKeyOf } from './client-key.js';

export type RateTier = 'status' | 'general' | 'media';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Rate-limit tier of the route; routes without one are not limited. */
    tier?: RateTier;
    /**
     * Units a request counts for (bulk look-ups: one per entry); default 1. With it, the limit
     * is checked once the body is parsed and validated (preHandler), still before the handler.
     */
    rateUnits?: (request: FastifyRequest) => number;
  }
}

export const WINDOW_MS = 60_000;

/** Route config for a tier: `{ config: tierConfig('status', config.rateLimits) }`. */
export function tierConfig(tier: RateTier, _limits?: Record<RateTier, number>) {
  return { tier };
}

export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  resetMs: number;
}

export interface RateLimitStore {
  hit(key: string, windowMs: number, units?: number): WindowCount | Promise<WindowCount>;
  close(): void;
}

/** Fixed windows in a Map; ended windows are swept once a window so the map stays bounded. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.sweeper = setInterval(() => this.sweep(), WINDOW_MS);
    this.sweeper.unref();
  }

  hit(key: string, windowMs: number, units = 1): WindowCount {
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      window = { count: 0, endsAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count += units;
    return { count: window.count, resetMs: window.endsAt - now };
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
  }

  close(): void {
    clearInterval(this.sweeper);
    this.windows.clear();
  }
}

/** One counter per window in Redis: created with its expiry, then incremented. */
export class RedisRateLimitStore implements RateLimitStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'observer:rl:',
  ) {}

  async hit(key: string, windowMs: number, units = 1): Promise<WindowCount> {
    const k = this.prefix + key;
    const results = await this.redis.multi().set(k, '0', 'PX', windowMs, 'NX').incrby(k, units).pttl(k).exec();
    if (!results) throw new Error('rate limit transaction aborted');
    const count = Number(results[1]?.[1]);
    const ttl = Number(results[2]?.[1]);
    return { count, resetMs: ttl > 0 ? ttl : windowMs };
  }

  close(): void {}
}

export interface RateLimitOptions {
  limits: Record<RateTier, number>;
  hasher: ClientHasher;
  store: RateLimitStore;
  /** A store failure lets the request through; this hears about it. */
  onError?: (error: unknown) => void;
}

export function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): void {
  const { limits, hasher, store } = options;
  app.addHook('onRoute', (route) => {
    const { tier, rateUnits } = (route.config ?? {}) as { tier?: RateTier; rateUnits?: (request: FastifyRequest) => number };
    if (tier === undefined) return;
    const limit = limits[tier];
    const policy = `"${tier}";q=${limit};w=${WINDOW_MS / 1000}`;

    const apply = (reply: FastifyReply, { count, resetMs }: WindowCount, done: (error?: Error) => void) => {
      const reset = Math.max(1, Math.ceil(resetMs / 1000));
      reply.header('RateLimit-Policy', policy);
      reply.header('RateLimit', `"${tier}";r=${Math.max(0, limit - count)};t=${reset}`);
      if (count <= limit) return done();
      done(
        new ObserverError('rate_limited', 429, `Rate limit exceeded: at most ${limit} requests per minute. Retry in ${reset} seconds.`, {
          headers: { 'Retry-After': String(reset) },
        }),
      );
    };

    const hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      let result: WindowCount | Promise<WindowCount>;
      try {
        result = store.hit(`${tier}:${clientKeyOf(request, hasher)}`, WINDOW_MS, rateUnits ? rateUnits(request) : 1);
      } catch (error) {
        options.onError?.(error);
        return done();
      }
      if (result instanceof Promise) {
        result.then(
          (counted) => apply(reply, counted, done),
          (error: unknown) => {
            options.onError?.(error);
            done();
          },
        );
      } else {
        apply(reply, result, done);
      }
    };
    const stage = rateUnits ? 'preHandler' : 'onRequest';
    const current = route[stage];
    const existing = current === undefined ? [] : Array.isArray(current) ? current : [current];
    route[stage] = [...existing, hook] as typeof current;
  });
  app.addHook('onClose', async () => store.close());
}
