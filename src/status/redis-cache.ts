import type { Redis } from 'ioredis';
import type { CacheEntry, StatusCache } from './cache.js';

/**
 * Status cache shared by every instance through Redis. Keys name the queried server (never a
 * client); values are the JSON of the entry, expiring with it. A `lock:` key per target lets
 * one instance ping while the others wait for its result.
 */
export class RedisStatusCache implements StatusCache {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'observer:status:',
  ) {}

  async get(key: string): Promise<CacheEntry | undefined> {
    const json = await this.redis.get(this.prefix + key);
    if (json === null) return undefined;
    const entry = JSON.parse(json) as { latest: CacheEntry['latest']; lastSuccess: CacheEntry['lastSuccess'] | 'latest' };
    return { latest: entry.latest, lastSuccess: entry.lastSuccess === 'latest' ? entry.latest : entry.lastSuccess };
  }

  async set(key: string, entry: CacheEntry, ttlMs: number): Promise<void> {
    // The last success is usually the latest result: store it once.
    const lastSuccess = entry.lastSuccess === entry.latest ? 'latest' : entry.lastSuccess;
    await this.redis.set(this.prefix + key, JSON.stringify({ latest: entry.latest, lastSuccess }), 'PX', Math.max(1, Math.ceil(ttlMs)));
  }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.prefix}lock:${key}`, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
  }

  async release(key: string): Promise<void> {
    await this.redis.del(`${this.prefix}lock:${key}`);
  }

  async close(): Promise<void> {}
}
