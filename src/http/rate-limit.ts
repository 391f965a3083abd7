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
 * answer), and a fixed window is a few lines in memory and one script call in Redis.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClientHasher } from '../core/client-hash.js';
import { ObserverError } from '../core/errors.js';
import type { SharedRedis } from '../redis/shared-redis.js';
import { clientKeyOf } from './client-key.js';

export type RateTier = 'status' | 'general' | 'media';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Rate-limit tier of the route; routes without one are not limited. */
    tier?: RateTier;
  }
}

export const WINDOW_MS = 60_000;

/** Route config for a tier: `{ config: tierConfig('status') }`. */
export function tierConfig(tier: RateTier) {
  return { tier };
}

export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  resetMs: number;
}

export interface RateLimitStore {
  hit(key: string, windowMs: number): WindowCount | Promise<WindowCount>;
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

  hit(key: string, windowMs: number): WindowCount {
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      window = { count: 0, endsAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count += 1;
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

/** Creates the window's counter with its expiry if missing, counts the hit: one round trip. */
const HIT_SCRIPT = `redis.call('set', KEYS[1], '0', 'PX', ARGV[1], 'NX')
local count = redis.call('incr', KEYS[1])
return {count, redis.call('pttl', KEYS[1])}`;

/**
 * One counter per window in Redis, shared by the instances (one EVALSHA per request). While
 * Redis is unavailable (SharedRedis's breaker is open, or the command fails or times out) the
 * instance counts in memory instead: limits still hold, per instance.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly local: MemoryRateLimitStore;

  constructor(
    private readonly redis: SharedRedis,
    private readonly prefix = 'observer:rl:',
    now: () => number = Date.now,
  ) {
    this.local = new MemoryRateLimitStore(now);
    redis.client.defineCommand('observerRateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    if (!this.redis.available) return this.local.hit(key, windowMs);
    const k = this.prefix + key;
    try {
      const [count, ttl] = (await this.redis.run((r) =>
        (r as unknown as RateLimitCommands).observerRateLimitHit(k, String(windowMs)),
      )) as [number, number];
      return { count, resetMs: ttl > 0 ? ttl : windowMs };
    } catch {
      return this.local.hit(key, windowMs);
    }
  }

  close(): void {
    this.local.close();
  }
}

interface RateLimitCommands {
  observerRateLimitHit(key: string, windowMs: string): Promise<unknown>;
}

/** The 429 of a tier whose window is spent, with its RateLimit headers and Retry-After. */
function rateLimitError(tier: RateTier, limit: number, { count, resetMs }: WindowCount): ObserverError {
  const reset = Math.max(1, Math.ceil(resetMs / 1000));
  return new ObserverError('rate_limited', 429, `Rate limit exceeded: at most ${limit} requests per minute. Retry in ${reset} seconds.`, {
    headers: {
      'RateLimit-Policy': `"${tier}";q=${limit};w=${WINDOW_MS / 1000}`,
      RateLimit: `"${tier}";r=${Math.max(0, limit - count)};t=${reset}`,
      'Retry-After': String(reset),
    },
  });
}

/**
 * Charges one unit of a tier to the request's client, outside the route's own tier (a ping
 * caused by an image draws on the status tier). Rejects with the tier's 429 when its window is
 * spent; a store failure lets the request through, as the route hooks do.
 */
export type TierCharger = (request: FastifyRequest, tier: RateTier) => Promise<void>;

export function tierCharger(options: RateLimitOptions): TierCharger {
  const { limits, hasher, store } = options;
  return async (request, tier) => {
    let counted: WindowCount;
    try {
      counted = await store.hit(`${tier}:${clientKeyOf(request, hasher)}`, WINDOW_MS);
    } catch (error) {
      options.onError?.(error);
      return;
    }
    if (counted.count > limits[tier]) throw rateLimitError(tier, limits[tier], counted);
  };
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
    const tier = (route.config as { tier?: RateTier } | undefined)?.tier;
    if (tier === undefined) return;
    const limit = limits[tier];
    const policy = `"${tier}";q=${limit};w=${WINDOW_MS / 1000}`;

    const apply = (reply: FastifyReply, counted: WindowCount, done: (error?: Error) => void) => {
      const { count, resetMs } = counted;
      if (count > limit) return done(rateLimitError(tier, limit, counted));
      reply.header('RateLimit-Policy', policy);
      reply.header('RateLimit', `"${tier}";r=${limit - count};t=${Math.max(1, Math.ceil(resetMs / 1000))}`);
      done();
    };

    const hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      let result: WindowCount | Promise<WindowCount>;
      try {
        result = store.hit(`${tier}:${clientKeyOf(request, hasher)}`, WINDOW_MS);
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
    const existing = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [...existing, hook];
  });
  app.addHook('onClose', async () => store.close());
}
