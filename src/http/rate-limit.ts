/**
 * Per-client rate limits in four tiers (docs/api.md, "Rate limits"): a fixed one-minute window
 * per client and tier, counted in memory or, when instances share Redis, in Redis.
 *
 * Answers carry the IETF structured fields (draft-ietf-httpapi-ratelimit-headers):
 *   RateLimit-Policy: "status";q=120;w=60
 *   RateLimit: "status";r=87;t=42
 * and a 429 adds Retry-After. The key is the client's opaque hash (ClientHasher), never an IP.
 *
 * Hand-written rather than @fastify/rate-limit: that plugin only emits the older draft's
 * RateLimit-Limit/-Remaining/-Reset headers, and a fixed window is a few lines in memory and
 * one script call in Redis.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClientHasher } from '../core/client-hash.js';
import { ObserverError } from '../core/errors.js';
import { LRUCache } from 'lru-cache';
import { rateLimitFields, type WindowCount, type WindowCounter } from '../core/rate-window.js';
import { RedisUnavailableError, type SharedRedis } from '../redis/shared-redis.js';
import { clientKeyOf } from './client-key.js';

export type RateTier = 'status' | 'general' | 'media' | 'vote';

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

/** Route config for a tier: `{ config: tierConfig('status') }`. */
export function tierConfig(tier: RateTier) {
  return { tier };
}

export type { WindowCount };

/** Counts requests per client and tier (and, with its own instance, pings per target IP). */
export interface RateLimitStore extends WindowCounter {
  close(): void;
}

/**
 * Client windows one store keeps at most: past it, the least recently seen client's window is
 * let go (it starts again at its next request), so a flood of new clients within one window
 * costs bounded memory.
 */
export const RATE_LIMIT_CLIENTS_MAX = 100_000;

export interface RateLimitStoreOptions {
  /** Client windows kept at most (default RATE_LIMIT_CLIENTS_MAX). */
  maxClients?: number;
  /** Bytes of client windows kept at most instead (a share of CACHE_MEMORY_MB). */
  maxBytes?: number;
}

/** The bound of a store's windows: bytes (a window is about its key, two bytes a character, and 160 bytes) or a count. */
function windowBound(options: RateLimitStoreOptions): { maxSize: number; sizeCalculation: (value: unknown, key: string) => number } | { max: number } {
  return options.maxBytes !== undefined
    ? { maxSize: options.maxBytes, sizeCalculation: (_value, key) => 2 * key.length + 160 }
    : { max: options.maxClients ?? RATE_LIMIT_CLIENTS_MAX };
}

/** Fixed windows in an LRU of at most `maxClients`; ended windows are swept once a window. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows: LRUCache<string, { count: number; endsAt: number }>;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly now: () => number = Date.now,
    options: RateLimitStoreOptions = {},
  ) {
    this.windows = new LRUCache<string, { count: number; endsAt: number }>(windowBound(options));
    this.sweeper = setInterval(() => this.sweep(), WINDOW_MS);
    this.sweeper.unref();
  }

  /** Client windows held now. */
  get size(): number {
    return this.windows.size;
  }

  hit(key: string, windowMs: number, _limit = 0, units = 1): WindowCount {
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
    const ended = [...this.windows.entries()].filter(([, window]) => window.endsAt <= now);
    for (const [key] of ended) this.windows.delete(key);
  }

  close(): void {
    clearInterval(this.sweeper);
    this.windows.clear();
  }
}

/**
 * Adds ARGV[2] hits to the window's counter, created with its expiry if missing: one round
 * trip. ARGV[1] = '0' adds them only to a window still open (hits of a window that has ended
 * here, which Redis may still be counting), never to a new one.
 */
const HIT_SCRIPT = `if ARGV[1] == '0' then
  if redis.call('exists', KEYS[1]) == 0 then return {0, -2} end
else
  redis.call('set', KEYS[1], '0', 'PX', ARGV[1], 'NX')
end
local count = redis.call('incrby', KEYS[1], ARGV[2])
return {count, redis.call('pttl', KEYS[1])}`;

/** Share of its limit a client may use on one instance before its hits are counted in Redis at once. */
export const LOCAL_SHARE = 0.25;
/** How often the hits counted locally are added to the shared counters. */
export const SHARED_FLUSH_MS = 100;

interface SharedWindow {
  /** The shared count Redis last answered. */
  known: number;
  /** Hits counted here and not yet added in Redis. */
  pending: number;
  endsAt: number;
}

/**
 * One counter per client and window in Redis, shared by the instances, counted so that a
 * cached answer costs no Redis round trip:
 *  - while a client has used less than a quarter of its limit (as far as this instance
 *    knows), its hits are counted here and added to Redis in one pipeline every 100 ms;
 *  - past that, each hit is added in Redis before the answer (one script call), so the limit
 *    is exact where it matters; a client already over its limit is refused without a call.
 * With N instances a burst shorter than 100 ms can exceed the limit by at most N/4 of it.
 * While Redis is unavailable (SharedRedis's breaker is open, or a command fails or times
 * out) the instance counts in memory instead: limits still hold, per instance.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly local: MemoryRateLimitStore;
  private readonly windows: LRUCache<string, SharedWindow>;
  /** Windows let go (ended, or past the cap) whose hits are still to be added in Redis. */
  private leftovers: Array<[string, SharedWindow]> = [];
  private readonly flusher: NodeJS.Timeout;
  private flushing = false;

  constructor(
    private readonly redis: SharedRedis,
    private readonly prefix = 'observer:rl:',
    private readonly now: () => number = Date.now,
    options: RateLimitStoreOptions = {},
  ) {
    this.local = new MemoryRateLimitStore(now, options);
    this.windows = new LRUCache<string, SharedWindow>({
      ...windowBound(options),
      dispose: (window, key, reason) => {
        if (reason !== 'delete' && window.pending > 0) this.leftovers.push([key, window]);
      },
    });
    redis.client.defineCommand('observerRateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.flusher = setInterval(() => void this.flush(), SHARED_FLUSH_MS);
    this.flusher.unref();
  }

  /** Client windows held now. */
  get size(): number {
    return this.windows.size;
  }

  hit(key: string, windowMs: number, limit: number, units = 1): WindowCount | Promise<WindowCount> {
    if (!this.redis.available) return this.local.hit(key, windowMs, limit, units);
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      // Replacing an ended window hands its unsent hits to the next flush (dispose).
      window = { known: 0, pending: 0, endsAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.pending += units;
    const estimate = window.known + window.pending;
    if (estimate <= limit * LOCAL_SHARE || window.known > limit) return { count: estimate, resetMs: window.endsAt - now };
    return this.addNow(key, window, windowMs, limit, units);
  }

  private async addNow(key: string, window: SharedWindow, windowMs: number, limit: number, units: number): Promise<WindowCount> {
    const hits = window.pending;
    window.pending = 0;
    try {
      const [count, ttl] = await this.redis.run((r) => this.send(r, key, windowMs, hits));
      this.learn(window, count, ttl, windowMs);
      return { count: count + window.pending, resetMs: Math.max(0, window.endsAt - this.now()) };
    } catch {
      return this.local.hit(key, windowMs, limit, units);
    }
  }

  private send(redis: SharedRedis['client'], key: string, windowMs: number, hits: number): Promise<[number, number]> {
    return (redis as unknown as RateLimitCommands).observerRateLimitHit(this.prefix + key, String(windowMs), String(hits)) as Promise<
      [number, number]
    >;
  }

  private learn(window: SharedWindow, count: number, ttl: number, windowMs: number): void {
    window.known = count;
    window.endsAt = this.now() + (ttl > 0 ? ttl : windowMs);
  }

  /**
   * Adds the hits counted locally to Redis, in one pipeline: those of open windows, and those
   * of windows let go since the last flush (added only to a window Redis still has open).
   * Hits whose command failed stay pending for the next flush; a pipeline that timed out is
   * not sent again, since Redis may yet apply it.
   */
  private async flush(): Promise<void> {
    if (this.flushing || !this.redis.available) return;
    const now = this.now();
    const ended = [...this.windows.entries()].filter(([, window]) => window.endsAt <= now);
    for (const [key, window] of ended) {
      this.windows.delete(key);
      this.leftover(key, window);
    }
    const batch = this.batch(now);
    if (batch.length === 0) return;
    this.flushing = true;
    try {
      const results = await this.redis.run(async (r) => {
        const pipeline = r.pipeline();
        for (const { key, windowMs, hits } of batch) {
          (pipeline as unknown as RateLimitCommands).observerRateLimitHit(this.prefix + key, String(windowMs), String(hits));
        }
        return pipeline.exec();
      });
      batch.forEach((sent, i) => {
        const [error, value] = results?.[i] ?? [new Error('no reply'), null];
        if (error || !Array.isArray(value)) this.keep(sent);
        else if (sent.windowMs > 0) this.learn(sent.window, Number(value[0]), Number(value[1]), WINDOW_MS);
      });
    } catch (error) {
      if (!(error instanceof RedisUnavailableError && error.sent)) for (const sent of batch) this.keep(sent);
    } finally {
      this.flushing = false;
    }
  }

  /** What the next flush sends, taken from the windows' pending hits. */
  private batch(now: number): PendingHits[] {
    const batch: PendingHits[] = [];
    const open = (window: SharedWindow) => (window.endsAt > now ? window.endsAt - now : 0);
    for (const [key, window] of this.leftovers.splice(0)) batch.push({ key, window, hits: window.pending, windowMs: open(window) });
    for (const [key, window] of this.windows.entries()) {
      if (window.pending > 0) batch.push({ key, window, hits: window.pending, windowMs: open(window) });
    }
    for (const sent of batch) sent.window.pending -= sent.hits;
    return batch;
  }

  private leftover(key: string, window: SharedWindow): void {
    if (window.pending > 0) this.leftovers.push([key, window]);
  }

  /** Hits Redis did not take: pending again, in their window or as a leftover. */
  private keep(sent: PendingHits): void {
    sent.window.pending += sent.hits;
    if (this.windows.peek(sent.key) !== sent.window) this.leftover(sent.key, sent.window);
  }

  close(): void {
    clearInterval(this.flusher);
    this.windows.clear();
    this.leftovers = [];
    this.local.close();
  }
}

interface PendingHits {
  key: string;
  window: SharedWindow;
  hits: number;
  /** Expiry of a window Redis creates for them; 0 (their window has ended here): only a window Redis still has open. */
  windowMs: number;
}

interface RateLimitCommands {
  observerRateLimitHit(key: string, windowMs: string, hits: string): Promise<unknown>;
}

/**
 * `RateLimit` tells one client its remaining budget, so it never goes out on an answer shared
 * caches may store (`Cache-Control: public`): a CDN would replay it to every client. Such
 * answers keep `RateLimit-Policy`, the same for everyone; 429s and other errors, which are not
 * stored, carry both.
 */
function withoutClientRateLimit(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void): void {
  const cacheControl = reply.getHeader('cache-control');
  if (typeof cacheControl === 'string' && cacheControl.startsWith('public')) reply.removeHeader('RateLimit');
  done(null, payload);
}

/** The IETF `RateLimit-Policy` and `RateLimit` fields of a tier after a count. */
export function rateLimitHeaders(tier: RateTier, limit: number, counted: WindowCount) {
  return rateLimitFields(tier, limit, WINDOW_MS, counted);
}

/** The 429 of a tier whose window is spent, with its RateLimit headers and Retry-After. */
export function rateLimitError(tier: RateTier, limit: number, counted: WindowCount): ObserverError {
  const reset = Math.max(1, Math.ceil(counted.resetMs / 1000));
  return new ObserverError('rate_limited', 429, `Rate limit exceeded: at most ${limit} requests per minute. Retry in ${reset} seconds.`, {
    headers: { ...rateLimitHeaders(tier, limit, counted), 'Retry-After': String(reset) },
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
      counted = await store.hit(`${tier}:${clientKeyOf(request, hasher)}`, WINDOW_MS, limits[tier]);
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

type TierHook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

/**
 * The hook that charges a request to `tier` (by `rateUnits` units, default 1), sets its
 * RateLimit headers, and fails it with the tier's 429 when the window is spent.
 */
export function tierHook(options: RateLimitOptions, tier: RateTier, rateUnits?: (request: FastifyRequest) => number): TierHook {
  const { limits, hasher, store } = options;
  const limit = limits[tier];
  const policy = `"${tier}";q=${limit};w=${WINDOW_MS / 1000}`;

  const apply = (reply: FastifyReply, counted: WindowCount, done: (error?: Error) => void) => {
    const { count, resetMs } = counted;
    if (count > limit) return done(rateLimitError(tier, limit, counted));
    reply.header('RateLimit-Policy', policy);
    reply.header('RateLimit', `"${tier}";r=${limit - count};t=${Math.max(1, Math.ceil(resetMs / 1000))}`);
    done();
  };

  return (request, reply, done) => {
    let result: WindowCount | Promise<WindowCount>;
    try {
      result = store.hit(`${tier}:${clientKeyOf(request, hasher)}`, WINDOW_MS, limit, rateUnits ? rateUnits(request) : 1);
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
}

export function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): void {
  app.addHook('onRoute', (route) => {
    const { tier, rateUnits } = (route.config ?? {}) as { tier?: RateTier; rateUnits?: (request: FastifyRequest) => number };
    if (tier === undefined) return;
    const hook = tierHook(options, tier, rateUnits);
    const stage = rateUnits ? 'preHandler' : 'onRequest';
    const current = route[stage];
    const existing = current === undefined ? [] : Array.isArray(current) ? current : [current];
    route[stage] = [...existing, hook] as typeof current;
    const sending = route.onSend;
    const onSend = sending === undefined ? [] : Array.isArray(sending) ? sending : [sending];
    route.onSend = [...onSend, withoutClientRateLimit] as typeof sending;
  });
  app.addHook('onClose', async () => options.store.close());
}
