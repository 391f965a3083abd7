/** One suite for both status caches: in memory, and in a real Redis on loopback. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedRedis } from '../../src/redis/shared-redis.js';
import { MemoryStatusCache, type CacheEntry, type StatusCache } from '../../src/status/index.js';
import { RedisStatusCache } from '../../src/status/redis-cache.js';
import { REDIS_URL } from '../support/services.js';

function entry(online: boolean, checkedAt: number, lastSuccess?: CacheEntry['latest']): CacheEntry {
  const latest = { status: { online, checked_at: new Date(checkedAt).toISOString() } as never, checkedAt };
  return { latest, lastSuccess: online ? latest : (lastSuccess ?? null) };
}

const redis = new SharedRedis(REDIS_URL);
beforeAll(async () => {
  await redis.ready();
});
afterAll(async () => {
  await redis.close();
});

const implementations: Array<[string, () => Promise<StatusCache>]> = [
  ['memory', async () => new MemoryStatusCache()],
  [
    'redis',
    async () => new RedisStatusCache(redis, { prefix: `observer:test:${process.pid}:${Math.random().toString(36).slice(2)}:` }),
  ],
];

describe.each(implementations)('%s status cache', (_name, make) => {
  it('returns what was set, with the last success kept beside a failure', async () => {
    const cache = await make();
    expect(await cache.get('java|a|')).toBeUndefined();
    const ok = entry(true, 1_000);
    await cache.set('java|a|', ok, 60_000);
    const got = await cache.get('java|a|');
    expect(got?.latest.checkedAt).toBe(1_000);
    expect(got?.lastSuccess?.checkedAt).toBe(1_000);

    await cache.set('java|a|', entry(false, 2_000, ok.latest), 60_000);
    const after = await cache.get('java|a|');
    expect(after?.latest.status.online).toBe(false);
    expect(after?.lastSuccess?.checkedAt).toBe(1_000);
    expect(after?.lastSuccess?.status.online).toBe(true);
  });

  it('keeps targets apart', async () => {
    const cache = await make();
    await cache.set('java|a|', entry(true, 1), 60_000);
    await cache.set('bedrock|a|', entry(false, 2), 60_000);
    expect((await cache.get('java|a|'))?.latest.checkedAt).toBe(1);
    expect((await cache.get('bedrock|a|'))?.latest.checkedAt).toBe(2);
  });

});

describe('expiry, on a fake clock', () => {
  it('the memory cache forgets an entry exactly when its time is up', async () => {
    let now = 1_000_000;
    const cache = new MemoryStatusCache({ now: () => now });
    await cache.set('java|short|', entry(true, 1), 30_000);
    now += 29_999;
    expect((await cache.get('java|short|'))?.latest.checkedAt).toBe(1);
    expect(cache.peek('java|short|')?.latest.checkedAt).toBe(1);
    now += 2;
    expect(await cache.get('java|short|')).toBeUndefined();
    expect(cache.peek('java|short|')).toBeUndefined();
  });

  it('the Redis cache stores an entry with that expiry (Redis forgets it), and its own L1 follows the clock', async () => {
    let now = 1_000_000;
    const prefix = `observer:test:${process.pid}:${Math.random().toString(36).slice(2)}:`;
    const cache = new RedisStatusCache(redis, { prefix, now: () => now });
    await cache.set('java|short|', entry(true, 1), 30_000);
    // At once, only what this instance holds: its L1.
    expect(cache.peek('java|short|')?.latest.checkedAt).toBe(1);
    expect(cache.peek('java|other|')).toBeUndefined();
    const ttl = await redis.client.pttl(`${prefix}java|short|`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30_000);
    // Once Redis has forgotten it, the in-process L1 does not keep serving it past its second.
    await redis.client.del(`${prefix}java|short|`);
    now += 1_001;
    expect(cache.peek('java|short|')).toBeUndefined();
    expect(await cache.get('java|short|')).toBeUndefined();
  });
});

describe('instances sharing the Redis cache', () => {
  it('share one ping for one target', async () => {
    const { createStatusService } = await import('../../src/status/index.js');
    const { startJavaServer } = await import('../support/minecraft.js');
    const { testConfig } = await import('../support/app.js');
    const { systemClock } = await import('../../src/core/clock.js');
    const server = await startJavaServer({ motd: 'shared' });
    const prefix = `observer:test:${process.pid}:${Math.random().toString(36).slice(2)}:`;
    const make = () =>
      createStatusService({ config: testConfig(), clock: systemClock, icmp: null, cache: new RedisStatusCache(redis, { prefix }) });
    const [a, b] = [make(), make()];
    try {
      const address = `127.0.0.1:${server.port}`;
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).lookup(address, 'java')));
      expect(answers.every((x) => x.status.online)).toBe(true);
      expect(new Set(answers.map((x) => x.status.checked_at)).size).toBe(1);
      expect(server.connections()).toBe(1);
    } finally {
      await server.close();
    }
  });
});
