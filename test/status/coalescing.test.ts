/**
 * Coalescing across instances, saturation and ICMP, with real Minecraft servers, the test
 * DNS server and a shared Redis (the tests' own key prefixes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { SharedRedis } from '../../src/redis/shared-redis.js';
import { createStatusService, type StatusCache } from '../../src/status/index.js';
import { RedisStatusCache } from '../../src/status/redis-cache.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startSilentServer } from '../support/hostile.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startOwnRedis } from '../support/redis-process.js';
import { REDIS_URL } from '../support/services.js';

// A generous command timeout: these tests are about coalescing, and on a loaded two-core machine
// a 250 ms timeout can rightly open the breaker, after which an instance pings on its own.
// The timeout and the breaker are tested in test/redis/shared-redis.test.ts.
const redis = new SharedRedis(REDIS_URL, { commandTimeoutMs: 1_000 });
let server: RunningJavaServer;
beforeAll(async () => {
  await redis.ready(5_000);
  server = await startJavaServer({ motd: 'coalescing' });
});
afterAll(async () => {
  await server.close();
  await redis.close();
});

const prefix = () => `observer:test:${process.pid}:${Math.random().toString(36).slice(2)}:`;

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  for (let i = 0; i < 1_000 && !check(); i += 1) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('coalescing across instances', () => {
  it('an instance that wins the claim after another pinged and released reads the cache instead of pinging', async () => {
    const shared = prefix();
    // Instance B is held at its claim until instance A has pinged, stored and released: the
    // interleaving that made two connections for one target.
    let claimReached!: () => void;
    const reached = new Promise<void>((resolve) => (claimReached = resolve));
    let letClaim!: () => void;
    const gate = new Promise<void>((resolve) => (letClaim = resolve));
    const real = new RedisStatusCache(redis, { prefix: shared });
    const heldAtClaim: StatusCache = {
      get: (key, options) => real.get(key, options),
      set: (key, entry, ttl, release) => real.set(key, entry, ttl, release),
      claim: async (key, ttl) => {
        claimReached();
        await gate;
        return real.claim(key, ttl);
      },
      release: (key, token) => real.release(key, token),
      close: () => real.close(),
    };
    const config = testConfig();
    const a = createStatusService({ config, clock: systemClock, icmp: null, cache: new RedisStatusCache(redis, { prefix: shared }) });
    const b = createStatusService({ config, clock: systemClock, icmp: null, cache: heldAtClaim });
    const address = `race.any.observer.test:${server.port}`;
    const before = server.connections();

    const fromB = b.lookup(address, 'java');
    await reached;
    const fromA = await a.lookup(address, 'java');
    letClaim();
    const answerB = await fromB;

    expect(fromA.status.online).toBe(true);
    expect(answerB.status.checked_at).toBe(fromA.status.checked_at);
    expect(server.connections() - before).toBe(1);
  });

  it('three instances, 300 concurrent look-ups of one cold target: one connection', async () => {
    const shared = prefix();
    const config = testConfig();
    const instances = [0, 1, 2].map(() =>
      createStatusService({ config, clock: systemClock, icmp: null, cache: new RedisStatusCache(redis, { prefix: shared }) }),
    );
    const before = server.connections();
    const address = `cold300.any.observer.test:${server.port}`;
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => instances[i % 3]!.lookup(address, 'java')));
    expect(answers.every((x) => x.status.online)).toBe(true);
    expect(new Set(answers.map((x) => x.status.checked_at)).size).toBe(1);
    expect(server.connections() - before).toBe(1);
  });
});

describe('saturation', () => {
  it('with a shared cache, reserves the ping slot before the first await', async () => {
    const status = createStatusService({
      config: testConfig({ MAX_CONCURRENT_PINGS: '1' }),
      clock: systemClock,
      icmp: null,
      cache: new RedisStatusCache(redis, { prefix: prefix() }),
    });
    const before = server.connections();
    const names = Array.from({ length: 5 }, (_, i) => `slot${i}-${Math.random().toString(36).slice(2)}.any.observer.test:${server.port}`);
    const settled = await Promise.allSettled(names.map((name) => status.lookup(name, 'java')));
    const busy = settled.filter((s) => s.status === 'rejected' && (s.reason as { code?: string }).code === 'service_busy');
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
    expect(busy).toHaveLength(4);
    expect(server.connections() - before).toBe(1);
  });

  it('a stale answer under saturation starts no refresh', async () => {
    const clock = new FakeClock();
    const status = createStatusService({ config: testConfig({ MAX_CONCURRENT_PINGS: '1', PING_TIMEOUT_MS: '2000' }), clock, icmp: null });
    const silent = await startSilentServer();
    try {
      const good = `127.0.0.1:${server.port}`;
      await status.lookup(good, 'java');
      clock.advance(61_000); // inside the stale-while-revalidate window
      const hanging = status.lookup(`127.0.0.1:${silent.port}`, 'java');
      await until(() => status.activePings === 1);
      const connections = server.connections();
      const stale = await status.lookup(good, 'java');
      expect(stale.cache).toBe('STALE');
      expect(status.activePings).toBe(1);
      await hanging;
      expect(server.connections()).toBe(connections);
    } finally {
      await silent.close();
    }
  });
});

describe('ICMP', () => {
  it('asks the IP that answered, not the first one resolved', async () => {
    // dual.observer.test is 127.0.0.1 then ::1; only ::1 has a server on this port.
    const v6 = await startJavaServer({ host: '::1', motd: 'v6 only' });
    const asked: string[] = [];
    try {
      const status = createStatusService({
        // A budget that a loaded machine cannot use up: this test is about which IP is asked.
        config: testConfig({ PING_TIMEOUT_MS: '30000' }),
        clock: systemClock,
        icmp: async (ip) => {
          asked.push(ip);
          return ip === '::1';
        },
      });
      const answer = await status.lookup(`dual.observer.test:${v6.port}`, 'java');
      expect(answer.status.online).toBe(true);
      expect(answer.status.ip_address).toBe('::1');
      expect(answer.status.icmp).toBe(true);
      expect(asked).toContain('::1');
    } finally {
      await v6.close();
    }
  });
});

describe('waiting on another instance’s claim', () => {
  it('accepts only a newer, fresh entry: an older local copy met when Redis drops out is not served as fresh', async () => {
    const own = await startOwnRedis();
    const clock = new FakeClock();
    const [ra, rb, rc] = [0, 1, 2].map(() => new SharedRedis(own.url, { commandTimeoutMs: 1_000 }));
    try {
      for (const r of [ra!, rb!, rc!]) expect(await r.ready(5_000)).toBe(true);
      const config = testConfig({ PING_TIMEOUT_MS: '2000' });
      const now = () => clock.now();
      const a = createStatusService({ config, clock, icmp: null, cache: new RedisStatusCache(ra!, { now }) });
      const realB = new RedisStatusCache(rb!, { now });
      let dropped = false;
      // Instance B loses Redis right after it finds the claim taken; its first read after
      // that, from its local copy, also moves the clock past the wait's budget.
      const droppingAfterClaim: StatusCache = {
        get: async (key, options) => {
          const entry = await realB.get(key, options);
          if (dropped && options?.skipL1) clock.advance(10_000);
          return entry;
        },
        set: (key, entry, ttl, release) => realB.set(key, entry, ttl, release),
        claim: async (key, ttl) => {
          const claimed = await realB.claim(key, ttl);
          if (claimed.token === null && !dropped) {
            dropped = true;
            await own.kill();
            await until(() => !rb!.available);
          }
          return claimed;
        },
        release: (key, token) => realB.release(key, token),
        close: () => realB.close(),
      };
      const b = createStatusService({ config, clock, icmp: null, cache: droppingAfterClaim });
      const address = `127.0.0.1:${server.port}`;
      const first = await b.lookup(address, 'java');
      clock.advance(10 * 60_000);
      const second = await a.lookup(address, 'java');
      expect(second.status.checked_at).not.toBe(first.status.checked_at);
      clock.advance(10 * 60_000);
      // A third instance holds the claim: B waits for its result.
      expect((await new RedisStatusCache(rc!, { now }).claim(`java|127.0.0.1|${server.port}`, 60_000)).token).not.toBeNull();
      const third = await b.lookup(address, 'java');
      expect(dropped).toBe(true);
      expect(third.cache).toBe('MISS');
      expect(third.status.checked_at).toBe(new Date(clock.now()).toISOString());
    } finally {
      await Promise.all([ra!, rb!, rc!].map((r) => r.close()));
      await own.stop();
    }
  });
});
