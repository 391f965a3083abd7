import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { SharedRedis } from '../redis/shared-redis.js';
import { MemoryStatusCache, type CacheEntry, type CacheReadOptions, type StatusCache, type StoredStatus } from './cache.js';

/** How long the in-process L1 trusts an entry read from (or written to) Redis. */
export const L1_TTL_MS = 1_000;
/** Entries the L1 keeps at most (hot targets only; the rest comes from Redis). */
const L1_MAX_ENTRIES = 2_000;
/** Token of a claim taken while Redis is unavailable: coalescing is then per instance. */
const LOCAL_CLAIM = 'local';

/** Deletes the claim only if it still holds the owner's token. */
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

function isStored(value: unknown): value is StoredStatus {
  if (typeof value !== 'object' || value === null) return false;
  const { status, checkedAt } = value as Partial<StoredStatus>;
  return typeof checkedAt === 'number' && typeof status === 'object' && status !== null;
}

/**
 * The entry a Redis value holds, or undefined for none: a value that is not an entry (cut
 * short, written by something else) is a miss, so the target is pinged and the value replaced.
 */
export function decodeEntry(json: string | null): CacheEntry | undefined {
  if (json === null) return undefined;
  let stored: { latest?: unknown; lastSuccess?: unknown };
  try {
    stored = JSON.parse(json) as typeof stored;
  } catch {
    return undefined;
  }
  if (typeof stored !== 'object' || stored === null || !isStored(stored.latest)) return undefined;
  const lastSuccess = stored.lastSuccess === 'latest' ? stored.latest : stored.lastSuccess;
  if (lastSuccess !== null && !isStored(lastSuccess)) return undefined;
  return { latest: stored.latest, lastSuccess };
}

/**
 * Status cache shared by every instance through Redis, in three tiers:
 *  1. an in-process L1 of about a second, so a hot target costs no Redis round trip;
 *  2. Redis, shared by the instances (one GET per request that misses the L1);
 *  3. a local memory cache, written through, that serves alone while Redis is unavailable
 *     (SharedRedis's breaker is open or a command fails).
 * Keys name the queried server (never a client); values are the JSON of the entry, expiring
 * with it. A `lock:` key per target, holding its owner's token, lets one instance ping while
 * the others wait for its result; only the owner can release it.
 */
export class RedisStatusCache implements StatusCache {
  private readonly l1: LRUCache<string, CacheEntry>;
  private readonly local: MemoryStatusCache;

  constructor(
    private readonly redis: SharedRedis,
    options: { prefix?: string; now?: () => number; local?: MemoryStatusCache } = {},
  ) {
    this.prefix = options.prefix ?? 'observer:status:';
    this.local = options.local ?? new MemoryStatusCache(options.now ? { now: options.now } : {});
    this.l1 = new LRUCache<string, CacheEntry>({
      max: L1_MAX_ENTRIES,
      ttl: L1_TTL_MS,
      ttlAutopurge: false,
      // ttlResolution 0: read the injected clock on every check (lru-cache otherwise caches it for 1 ms of real time).
      ...(options.now ? { perf: { now: options.now }, ttlResolution: 0 } : {}),
    });
  }

  private readonly prefix: string;

  /** True while the cache (and so the coalescing) is shared with other instances. */
  get shared(): boolean {
    return this.redis.available;
  }

  async get(key: string, options: CacheReadOptions = {}): Promise<CacheEntry | undefined> {
    if (!options.skipL1) {
      const hot = this.l1.get(key);
      if (hot) return hot;
    }
    if (!this.redis.available) return this.local.get(key);
    let json: string | null;
    try {
      json = await this.redis.run((r) => r.get(this.prefix + key));
    } catch {
      return this.local.get(key);
    }
    const entry = decodeEntry(json);
    if (entry !== undefined) this.l1.set(key, entry);
    return entry;
  }

  async set(key: string, entry: CacheEntry, ttlMs: number): Promise<void> {
    this.l1.set(key, entry, { ttl: Math.min(L1_TTL_MS, ttlMs) });
    await this.local.set(key, entry, ttlMs);
    // The last success is usually the latest result: store it once.
    const lastSuccess = entry.lastSuccess === entry.latest ? 'latest' : entry.lastSuccess;
    const json = JSON.stringify({ latest: entry.latest, lastSuccess });
    await this.redis.tryRun(
      (r) => r.set(this.prefix + key, json, 'PX', Math.max(1, Math.ceil(ttlMs))),
      () => null,
    );
  }

  async claim(key: string, ttlMs: number): Promise<string | null> {
    const token = randomUUID();
    return this.redis.tryRun<string | null>(
      async (r) => ((await r.set(`${this.prefix}lock:${key}`, token, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK' ? token : null),
      () => LOCAL_CLAIM,
    );
  }

  async release(key: string, token: string): Promise<void> {
    if (token === LOCAL_CLAIM) return;
    await this.redis.tryRun(
      (r) => r.eval(RELEASE_SCRIPT, 1, `${this.prefix}lock:${key}`, token),
      () => 0,
    );
  }

  async close(): Promise<void> {
    this.l1.clear();
    await this.local.close();
  }
}
