/** Several instances sharing one Redis: one rate limit per client, and no raw IP in any key. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientHasher } from '../../src/core/client-hash.js';
import { systemClock } from '../../src/core/clock.js';
import { RedisDailySecret } from '../../src/redis/daily-secret.js';
import { SharedRedis } from '../../src/redis/shared-redis.js';
import { testApp } from '../support/app.js';
import { REDIS_URL } from '../support/services.js';

const shared = new SharedRedis(REDIS_URL);
const redis = new Redis(REDIS_URL);
beforeAll(async () => {
  await shared.ready();
});
afterAll(async () => {
  await redis.quit();
  await shared.close();
});

async function instance(prefix: string) {
  const hasher = new ClientHasher(systemClock, new RedisDailySecret(shared, prefix));
  await hasher.ready();
  return testApp({ RATE_LIMIT_GENERAL: '2' }, { redis: shared, hasher });
}

describe('instances sharing Redis', () => {
  it('share the per-client limit, and keep no raw IP in Redis', async () => {
    const prefix = `observer:test-secret:${process.pid}:${Date.now()}:`;
    const [a, b] = [await instance(prefix), await instance(prefix)];
    try {
      const client = `198.51.100.${Math.floor(Math.random() * 200) + 20}`;
      const hit = (app: typeof a) => app.inject({ method: 'GET', url: '/api/v1/openapi.json', remoteAddress: client });
      expect((await hit(a)).statusCode).toBe(200);
      expect((await hit(b)).statusCode).toBe(200);
      const third = await hit(a);
      expect(third.statusCode).toBe(429);
      expect(third.headers['ratelimit-policy']).toBe('"general";q=2;w=60');
      const keys = await redis.keys('observer:*');
      expect(keys.some((k) => k.startsWith('observer:rl:'))).toBe(true);
      expect(keys.join('\n')).not.toContain(client);
      // The day's secret expires with its day.
      const secretKeys = await redis.keys(`${prefix}*`);
      expect(secretKeys).toHaveLength(1);
      const ttl = await redis.pttl(secretKeys[0]!);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(86_400_000);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
