import { LRUCache } from 'lru-cache';
import type { ServerStatus } from '../core/types.js';
import type { FailureStreak } from './damping.js';

/** A status as it was produced by one ping, with the time it was checked. */
export interface StoredStatus {
  status: ServerStatus;
  /** Milliseconds since the epoch of the ping. */
  checkedAt: number;
}

/** What the cache keeps per target: the latest result, and the latest success. */
export interface CacheEntry {
  latest: StoredStatus;
  lastSuccess: StoredStatus | null;
  /** Failures in a row since `lastSuccess`, for flap damping; absent or null after a success. */
  streak?: FailureStreak | null;
}

/** A claim's outcome: the owner token (null when another instance holds it) and the entry then. */
export interface Claim {
  token: string | null;
  entry: CacheEntry | undefined;
}

export interface CacheReadOptions {
  /** Read past an in-process L1 (a tiered cache's shared tier): to see another instance's write. */
  skipL1?: boolean;
}

/**
 * Status cache. The memory implementation is bounded by bytes (favicons can be large); a
 * Redis implementation shares it across instances.
 */
export interface StatusCache {
  get(key: string, options?: CacheReadOptions): Promise<CacheEntry | undefined>;
  /**
   * The entry this instance holds in memory, read at once (a shared cache: its in-process
   * tier only); undefined when it holds none, and `get` may still find one.
   */
  peek?(key: string): CacheEntry | undefined;
  /**
   * Keeps the entry for `ttlMs` (long enough to serve the last success stale); with `release`,
   * also releases the claim that token owns, in the same round trip.
   */
  set(key: string, entry: CacheEntry, ttlMs: number, release?: string): Promise<void>;
  /**
   * Shared caches only: claims the right to ping `key` for `ttlMs`, so that instances share one
   * ping per target, and reads the entry in the same round trip (another instance may have
   * pinged and released since this one last read it).
   */
  claim?(key: string, ttlMs: number): Promise<Claim>;
  /** Releases the claim if `token` still owns it. */
  release?(key: string, token: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The JSON body of a status, serialised once per status object: the status routes send it on
 * every hit. It is kept as text, not bytes: Node writes a text body and its headers in one
 * write, where a buffer body goes out with the headers in a writev, which cost more than
 * encoding the text again (npm run bench -- service, per core: about a tenth of a cached
 * answer's CPU on Node 26, within the noise on Node 20; docs/performance.md). A text of Latin-1
 * characters takes a byte each in memory, as its bytes would; one with a character past them
 * (most emoji and non-Latin scripts in a MOTD) two. Bodies still match the response schema;
 * tests check them against the OpenAPI document.
 */
const texts = new WeakMap<object, string>();
export function statusBody(status: ServerStatus): string {
  let text = texts.get(status);
  if (text === undefined) {
    text = JSON.stringify(status);
    texts.set(status, text);
  }
  return text;
}

/**
 * About the length of `value`'s JSON text, counted without writing it (a new entry is sized on
 * every ping, and serialising it would cost ten times as much): strings without their escapes,
 * every number as 8 characters.
 */
function jsonLength(value: unknown): number {
  if (typeof value === 'string') return value.length + 2;
  if (typeof value === 'number') return 8;
  if (typeof value === 'boolean') return 5;
  if (value === null || typeof value !== 'object') return 4;
  let length = 2;
  if (Array.isArray(value)) {
    for (const item of value) length += jsonLength(item) + 1;
    return length;
  }
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) length += key.length + 4 + jsonLength(item);
  }
  return length;
}

/**
 * Approximate bytes an entry holds in memory: the status object (about twice its JSON) and the
 * body served for it (once more), except the favicon, one string the object and the body each
 * hold once. Measured without keeping a body for the cached object: the body served is often
 * that of a copy (with the `blocked` flag), and a second one would double the text.
 */
function entrySize(entry: CacheEntry): number {
  const size = (s: StoredStatus | null) => {
    if (!s) return 0;
    const favicon = s.status.favicon?.length ?? 0;
    return 3 * (jsonLength(s.status) - favicon) + 2 * favicon;
  };
  return size(entry.latest) + (entry.lastSuccess === entry.latest ? 0 : size(entry.lastSuccess)) + 64;
}

export class MemoryStatusCache implements StatusCache {
  private readonly lru: LRUCache<string, CacheEntry>;

  constructor(options: { maxBytes?: number; now?: () => number } = {}) {
    this.lru = new LRUCache<string, CacheEntry>({
      maxSize: options.maxBytes ?? 64 * 1024 * 1024,
      sizeCalculation: entrySize,
      ttlAutopurge: false,
      // ttlResolution 0: read the injected clock on every check (lru-cache otherwise caches it for 1 ms of real time).
      ...(options.now ? { perf: { now: options.now }, ttlResolution: 0 } : {}),
    });
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    return this.peek(key);
  }

  peek(key: string): CacheEntry | undefined {
    return this.lru.get(key);
  }

  async set(key: string, entry: CacheEntry, ttlMs: number): Promise<void> {
    this.lru.set(key, entry, { ttl: ttlMs });
  }

  async close(): Promise<void> {
    this.lru.clear();
  }
}
