import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { errorCodeOf } from '../core/errors.js';
import type { SharedRedis } from '../redis/shared-redis.js';
import type { FailureStreak } from './damping.js';
import { MemoryStatusCache, type CacheEntry, type CacheReadOptions, type StatusCache, type StoredStatus, type Claim } from './cache.js';

/** How long the in-process L1 trusts an entry read from (or written to) Redis. */
export const L1_TTL_MS = 1_000;
/** Entries the L1 keeps at most (hot targets only; the rest comes from Redis). */
const L1_MAX_ENTRIES = 2_000;
/** Token of a claim taken while Redis is unavailable: coalescing is then per instance. */
const LOCAL_CLAIM = 'local';

/** Deletes the claim only if it still holds the owner's token. */
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** Takes the claim KEYS[1] if free and reads the entry KEYS[2]: {1 if taken, the entry's JSON}. */
const CLAIM_SCRIPT = `local won = redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')
return {won and 1 or 0, redis.call('get', KEYS[2])}`;

/** Writes the entry KEYS[1] and, when ARGV[3] is the owner's token, releases the claim KEYS[2]. */
const SET_SCRIPT = `redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' and redis.call('get', KEYS[2]) == ARGV[3] then redis.call('del', KEYS[2]) end
return 1`;

interface StatusCacheCommands {
  observerStatusClaim(lock: string, key: string, token: string, ttlMs: string): Promise<[number, string | null]>;
  observerStatusSet(key: string, lock: string, json: string, ttlMs: string, token: string): Promise<number>;
}

function commands(redis: SharedRedis['client']): StatusCacheCommands {
  return redis as unknown as StatusCacheCommands;
}

function isStored(value: unknown): value is StoredStatus {
  if (typeof value !== 'object' || value === null) return false;
  const { status, checkedAt } = value as Partial<StoredStatus>;
  if (typeof checkedAt !== 'number' || typeof status !== 'object' || status === null) return false;
  // Written by a version without `error_code`: the code its `error` sentence stands for.
  if (status.error_code === undefined) status.error_code = status.online ? null : errorCodeOf(status.error);
  return true;
}

function isStreak(value: unknown): value is FailureStreak {
  if (typeof value !== 'object' || value === null) return false;
  const { failures, since } = value as Partial<FailureStreak>;
  return Number.isInteger(failures) && typeof since === 'number';
}

/**
 * The entry a Redis value holds, or undefined for none: a value that is not an entry (cut
 * short, written by something else) is a miss, so the target is pinged and the value replaced.
 */
export function decodeEntry(json: string | null): CacheEntry | undefined {
  if (json === null) return undefined;
  let stored: { latest?: unknown; lastSuccess?: unknown; streak?: unknown };
  try {
    stored = JSON.parse(json) as typeof stored;
  } catch {
    return undefined;
  }
  if (typeof stored !== 'object' || stored === null || !isStored(stored.latest)) return undefined;
  const lastSuccess = stored.lastSuccess === 'latest' ? stored.latest : stored.lastSuccess;
  if (lastSuccess !== null && !isStored(lastSuccess)) return undefined;
  return { latest: stored.latest, lastSuccess, streak: isStreak(stored.streak) ? stored.streak : null };
}

/**
 * Status cache shared by every instance through Redis, in three tiers:
 *  1. an in-process L1 of about a second, so a hot target costs no Redis round trip;
 *  2. Redis, shared by the instances (one GET per request that misses the L1);
 *  3. a local memory cache, written through, that serves alone while Redis is unavailable
 *     (SharedRedis's breaker is open or a command fails).
 * Keys name the queried server (never a client); values are the JSON of the entry, expiring
 * with it. A `lock:` key per target, holding its owner's token, lets one instance ping while
 * the others wait for its result; only the owner can release it. A cold look-up costs three
 * round trips: the read, the claim (which reads again), the write (which releases).
 */
export class RedisStatusCache implements StatusCache {
  private readonly l1: LRUCache<string, CacheEntry>;
  private readonly local: MemoryStatusCache;

  constructor(
    private readonly redis: SharedRedis,
    options: { prefix?: string; now?: () => number; local?: MemoryStatusCache } = {},
  ) {
    this.prefix = options.prefix ?? 'observer:status:';
    redis.client.defineCommand('observerStatusClaim', { numberOfKeys: 2, lua: CLAIM_SCRIPT });
    redis.client.defineCommand('observerStatusSet', { numberOfKeys: 2, lua: SET_SCRIPT });
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

  /** The L1's entry; while Redis is away, the local cache's (the one `get` then reads). */
  peek(key: string): CacheEntry | undefined {
    return this.l1.get(key) ?? (this.redis.available ? undefined : this.local.peek(key));
  }

  async set(key: string, entry: CacheEntry, ttlMs: number, release?: string): Promise<void> {
    this.l1.set(key, entry, { ttl: Math.min(L1_TTL_MS, ttlMs) });
    await this.local.set(key, entry, ttlMs);
    // The last success is usually the latest result: store it once.
    const lastSuccess = entry.lastSuccess === entry.latest ? 'latest' : entry.lastSuccess;
    const json = JSON.stringify({ latest: entry.latest, lastSuccess, streak: entry.streak ?? null });
    const token = release === undefined || release === LOCAL_CLAIM ? '' : release;
    await this.redis.tryRun(
      (r) => commands(r).observerStatusSet(this.prefix + key, this.lockKey(key), json, String(Math.max(1, Math.ceil(ttlMs))), token),
      () => null,
    );
  }

  async claim(key: string, ttlMs: number): Promise<Claim> {
    const token = randomUUID();
    return this.redis.tryRun<Claim>(
      async (r) => {
        const [won, json] = await commands(r).observerStatusClaim(this.lockKey(key), this.prefix + key, token, String(Math.max(1, Math.ceil(ttlMs))));
        return { token: won === 1 ? token : null, entry: decodeEntry(json ?? null) };
      },
      async () => ({ token: LOCAL_CLAIM, entry: await this.local.get(key) }),
    );
  }

  async release(key: string, token: string): Promise<void> {
    if (token === LOCAL_CLAIM) return;
    await this.redis.tryRun(
      (r) => r.eval(RELEASE_SCRIPT, 1, this.lockKey(key), token),
      () => 0,
    );
  }

  private lockKey(key: string): string {
    return `${this.prefix}lock:${key}`;
  }

  async close(): Promise<void> {
    this.l1.clear();
    await this.local.close();
  }
}
