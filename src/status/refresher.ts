/**
 * Background refresher: keeps /trends fresh without waiting for users. It re-checks the servers
 * looked up in the last `windowMinutes`, most looked-up first, at most `pingsPerMinute` a
 * minute, each no more often than the status cache TTL. With Redis, instances share the work:
 * a target is refreshed by the one instance that wins `SET key NX PX ttl` for it in the current
 * TTL window; the others skip it (while Redis is down, each instance refreshes on its own).
 * `stop()` ends the loop and waits for the look-up in flight.
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { ObserverError } from '../core/errors.js';
import type { QueryMode } from '../core/types.js';
import type { SharedRedis } from '../redis/shared-redis.js';
import type { LookupOptions, StatusAnswer, StatusLookup } from './types.js';

/** Bytes of targets remembered by default; the least recently looked up are forgotten first. */
export const DEFAULT_REFRESHER_BYTES = 2 * 1024 * 1024;
/** Addresses whose key is kept per mode; past it the memo starts again. */
const PLAIN_KEYS_MAX = 10_000;

interface Tracked {
  address: string;
  mode: QueryMode;
  query: LookupOptions['query'];
  lookups: number;
  lastLookup: number;
  lastRefresh: number;
}

/** Approximate bytes a tracked target holds: its key and address (two bytes a character), the object, the cache's slot. */
function trackedSize(target: Tracked, key: string): number {
  return 2 * (key.length + target.address.length) + 160;
}

export interface RefresherOptions {
  /** The status service itself (not the tracking wrapper, so refreshes are not counted as look-ups). */
  status: StatusLookup;
  clock: Clock;
  windowMinutes: number;
  pingsPerMinute: number;
  ttlSeconds: number;
  redis?: SharedRedis | null;
  redisPrefix?: string;
  /** Bytes of tracked targets kept at most (default DEFAULT_REFRESHER_BYTES); part of CACHE_MEMORY_MB. */
  maxBytes?: number;
  onError?: (error: unknown, context: string) => void;
}

export class BackgroundRefresher {
  private readonly targets: LRUCache<string, Tracked>;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  /**
   * The keys of look-ups without a Query by mode and address as asked, so that a target looked
   * up again makes no new key string (each new string is hashed again to find its target).
   */
  private readonly plainKeys = new Map<QueryMode, Map<string, string>>();
  /** Refreshes done by this instance (for tests and health). */
  refreshed = 0;

  constructor(private readonly options: RefresherOptions) {
    this.targets = new LRUCache<string, Tracked>({ maxSize: options.maxBytes ?? DEFAULT_REFRESHER_BYTES, sizeCalculation: trackedSize });
  }

  /** Notes a user's look-up (called by `tracking`). */
  noteLookup(address: string, mode: QueryMode, options: LookupOptions = {}): void {
    const key = this.keyOf(address, mode, options.query);
    const now = this.options.clock.now();
    const known = this.targets.get(key);
    if (known) {
      known.lookups += 1;
      known.lastLookup = now;
      return;
    }
    this.targets.set(key, { address, mode, query: options.query, lookups: 1, lastLookup: now, lastRefresh: now });
  }

  /** A target's key: its mode, its address as the service normalises it, its Query. */
  private keyOf(address: string, mode: QueryMode, query: LookupOptions['query']): string {
    if (query) return `${mode}|${address.trim().toLowerCase()}|q${query.port ?? ''}`;
    let keys = this.plainKeys.get(mode);
    if (keys === undefined) this.plainKeys.set(mode, (keys = new Map()));
    let key = keys.get(address);
    if (key === undefined) {
      if (keys.size >= PLAIN_KEYS_MAX) keys.clear();
      key = `${mode}|${address.trim().toLowerCase()}|`;
      keys.set(address, key);
    }
    return key;
  }

  /** A StatusLookup that notes every successful look-up of `inner` here. */
  tracking(inner: StatusLookup): StatusLookup {
    return {
      lookup: async (address, mode, options) => {
        const answer: StatusAnswer = await inner.lookup(address, mode, options);
        this.noteLookup(address, mode, options);
        return answer;
      },
      cached: (address, mode, options) => {
        const answer = inner.cached?.(address, mode, options);
        if (answer) this.noteLookup(address, mode, options);
        return answer;
      },
    };
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  /** Stops the loop; resolves once the refresh in flight (if any) has settled. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    const interval = 60_000 / this.options.pingsPerMinute;
    this.timer = setTimeout(() => {
      this.running = this.tick()
        .then(() => undefined)
        .catch((error: unknown) => this.options.onError?.(error, 'background refresh'))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, interval);
    this.timer.unref();
  }

  /** The most looked-up target due for a refresh, or undefined. Forgets targets out of the window. */
  private next(): [string, Tracked] | undefined {
    const now = this.options.clock.now();
    const windowStart = now - this.options.windowMinutes * 60_000;
    const ttlMs = this.options.ttlSeconds * 1000;
    const forgotten: string[] = [];
    // forEach, not entries(): no pair allocated per target on a scan that runs every tick.
    let bestKey: string | undefined;
    let bestTarget: Tracked | undefined;
    this.targets.forEach((target, key) => {
      if (target.lastLookup < windowStart) forgotten.push(key);
      else if (now - target.lastRefresh >= ttlMs && (!bestTarget || target.lookups > bestTarget.lookups)) {
        bestKey = key;
        bestTarget = target;
      }
    });
    for (const key of forgotten) this.targets.delete(key);
    return bestTarget && bestKey !== undefined ? [bestKey, bestTarget] : undefined;
  }

  /** Refreshes one target; the tick is spent even when another instance holds it. */
  async tick(): Promise<boolean> {
    const picked = this.next();
    if (!picked) return false;
    const [key, target] = picked;
    const now = this.options.clock.now();
    target.lastRefresh = now;
    if (!(await this.claim(key, now))) return false;
    try {
      await this.options.status.lookup(target.address, target.mode, {
        background: true,
        ...(target.query ? { query: target.query } : {}),
      });
    } catch (error) {
      // A name that stopped resolving, or a busy service: expected, and retried next window.
      if (error instanceof ObserverError) return false;
      throw error;
    }
    this.refreshed += 1;
    return true;
  }

  /** With Redis: one instance per target per TTL window. Without it (or when it fails): this one. */
  private async claim(key: string, now: number): Promise<boolean> {
    const { redis } = this.options;
    if (!redis) return true;
    const ttlMs = this.options.ttlSeconds * 1000;
    const window = Math.floor(now / ttlMs);
    const claimKey = `${this.options.redisPrefix ?? 'observer:refresh:'}${key}:${window}`;
    // Redis down (breaker open, or the command fails): this instance refreshes on its own.
    const won = await redis.tryRun((r) => r.set(claimKey, '1', 'PX', ttlMs, 'NX'), () => 'OK' as const);
    return won === 'OK';
  }
}
