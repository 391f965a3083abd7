import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createStatusService,
  MemoryStatusCache,
  SATURATION_STALE_MS,
  STALE_WHILE_REVALIDATE_MS,
  type StatusCache,
} from '../../src/status/index.js';
import { ObserverError } from '../../src/core/errors.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startSilentServer } from '../support/hostile.js';
import { FakeClock } from '../support/clock.js';
import { testConfig } from '../support/app.js';

const TTL_MS = 60_000;

function service(clock: FakeClock, env: Record<string, string> = {}) {
  return createStatusService({ config: testConfig(env), clock, icmp: null });
}

/** Waits (real time) until `check` holds: background refreshes run on real sockets. */
async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

let server: RunningJavaServer;
beforeAll(async () => {
  server = await startJavaServer({ motd: 'swr', onlinePlayers: 1 });
});
afterAll(async () => {
  await server.close();
});

describe('StatusService cache (fake clock, real server)', () => {
  it('serves HIT within the TTL with max-age counting down', async () => {
    const clock = new FakeClock();
    const status = service(clock);
    const address = `127.0.0.1:${server.port}`;
    const first = await status.lookup(address, 'java');
    expect(first).toMatchObject({ cache: 'MISS', maxAgeSeconds: 60 });
    clock.advance(45_000);
    const second = await status.lookup(address, 'java');
    expect(second).toMatchObject({ cache: 'HIT', maxAgeSeconds: 15 });
    expect(second.status.checked_at).toBe(first.status.checked_at);
  });

  it('after expiry serves the last success stale for up to 5 minutes while one refresh runs', async () => {
    const clock = new FakeClock();
    const status = service(clock);
    const address = `127.0.0.1:${server.port}`;
    server.setOnlinePlayers(1);
    const first = await status.lookup(address, 'java');
    const connections = server.connections();
    server.setOnlinePlayers(2);

    clock.advance(TTL_MS + 1_000);
    const stale = await Promise.all([status.lookup(address, 'java'), status.lookup(address, 'java')]);
    for (const answer of stale) {
      expect(answer.cache).toBe('STALE');
      expect(answer.status.stale).toBe(true);
      expect(answer.status.checked_at).toBe(first.status.checked_at);
      expect(answer.status.players?.online).toBe(1);
    }
    // One background refresh for both requests.
    await until(async () => (await status.lookup(address, 'java')).cache === 'HIT');
    expect(server.connections()).toBe(connections + 1);
    const fresh = await status.lookup(address, 'java');
    expect(fresh.status.stale).toBe(false);
    expect(fresh.status.players?.online).toBe(2);
    expect(fresh.status.checked_at).toBe(new Date(clock.now()).toISOString());
  });

  it('answers at once from memory what lookup would (fresh, stale with its one refresh), and leaves the rest to lookup', async () => {
    const clock = new FakeClock();
    const status = service(clock);
    const address = `127.0.0.1:${server.port}`;
    expect(status.cached(address, 'java')).toBeUndefined();
    expect(status.cached('bad address!', 'java')).toBeUndefined();
    const first = await status.lookup(address, 'java');
    clock.advance(10_000);
    expect(status.cached(address, 'java')).toEqual(await status.lookup(address, 'java'));
    expect(status.cached(address, 'java')).toMatchObject({ cache: 'HIT', maxAgeSeconds: 50, status: first.status });
    expect(status.cached(address, 'bedrock')).toBeUndefined();

    const connections = server.connections();
    clock.advance(TTL_MS);
    expect(status.cached(address, 'java')).toMatchObject({ cache: 'STALE', status: { stale: true, checked_at: first.status.checked_at } });
    await status.pingEnded(address, 'java');
    expect(server.connections()).toBe(connections + 1);
    expect(status.cached(address, 'java')).toMatchObject({ cache: 'HIT', status: { stale: false } });

    clock.advance(TTL_MS + STALE_WHILE_REVALIDATE_MS + 1_000);
    expect(status.cached(address, 'java')).toBeUndefined();
    expect(server.connections()).toBe(connections + 1);
  });

  it('past the stale window a fresh ping is waited for', async () => {
    const clock = new FakeClock();
    const status = service(clock);
    const address = `127.0.0.1:${server.port}`;
    await status.lookup(address, 'java');
    clock.advance(TTL_MS + STALE_WHILE_REVALIDATE_MS + 1_000);
    const answer = await status.lookup(address, 'java');
    expect(answer.cache).toBe('MISS');
    expect(answer.status.stale).toBe(false);
  });

  it('failures are cached too, and never served stale', async () => {
    const clock = new FakeClock();
    const status = service(clock, { PING_TIMEOUT_MS: '300' });
    const silent = await startSilentServer();
    try {
      const address = `127.0.0.1:${silent.port}`;
      const first = await status.lookup(address, 'java');
      expect(first.status).toMatchObject({ online: false, error: 'timed out', stale: false });
      expect((await status.lookup(address, 'java')).cache).toBe('HIT');
      expect(silent.accepted()).toBe(1);
      clock.advance(TTL_MS + 1_000);
      const again = await status.lookup(address, 'java');
      expect(again.cache).toBe('MISS');
      expect(silent.accepted()).toBe(2);
    } finally {
      await silent.close();
    }
  });

  it('when saturated, serves the last success under 24 h stale, and refuses without one', async () => {
    const clock = new FakeClock();
    const status = service(clock, { MAX_CONCURRENT_PINGS: '1', PING_TIMEOUT_MS: '2000' });
    const silent = await startSilentServer();
    try {
      const good = `127.0.0.1:${server.port}`;
      const first = await status.lookup(good, 'java');
      expect(first.status.online).toBe(true);
      // Long past the stale-while-revalidate window, still within 24 hours.
      clock.advance(SATURATION_STALE_MS - 60_000);

      // A hanging ping holds the only slot.
      const hanging = status.lookup(`127.0.0.1:${silent.port}`, 'java');
      await until(() => status.activePings === 1);

      const saturated = await status.lookup(good, 'java');
      expect(saturated.cache).toBe('STALE');
      expect(saturated.status.stale).toBe(true);
      expect(saturated.status.checked_at).toBe(first.status.checked_at);

      const unknown = status.lookup(`127.0.0.2:${server.port}`, 'java');
      await expect(unknown).rejects.toBeInstanceOf(ObserverError);
      await expect(unknown).rejects.toMatchObject({ statusCode: 503, code: 'service_busy' });

      await hanging;
      // With the slot free again, a fresh ping is made.
      const fresh = await status.lookup(good, 'java');
      expect(fresh.cache).toBe('MISS');
    } finally {
      await silent.close();
    }
  });

  it('the memory cache is bounded by bytes', async () => {
    const cache = new MemoryStatusCache({ maxBytes: 20_000 });
    const big = 'x'.repeat(4_000);
    for (let i = 0; i < 50; i++) {
      const stored = { status: { favicon: big } as never, checkedAt: i };
      await cache.set(`k${i}`, { latest: stored, lastSuccess: stored }, 60_000);
    }
    let kept = 0;
    for (let i = 0; i < 50; i++) if (await cache.get(`k${i}`)) kept += 1;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(5);
    expect(await cache.get('k49')).toBeDefined();
  });
});

describe('StatusService look-up recording', () => {
  it('records a client+server pair at most once a minute, on a real SQLite store', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openStore } = await import('../../src/store/index.js');
    const dir = mkdtempSync(join(tmpdir(), 'observer-lookups-'));
    const clock = new FakeClock();
    const config = testConfig({ DATABASE_URL: `sqlite:${join(dir, 'observer.db')}` });
    const store = await openStore(config, clock);
    const recorded: string[] = [];
    const recordLookup = store.recordLookup.bind(store);
    store.recordLookup = (serverId, clientKey) => {
      recorded.push(clientKey);
      recordLookup(serverId, clientKey);
    };
    try {
      const status = createStatusService({ config, clock, icmp: null, store });
      const address = `127.0.0.1:${server.port}`;
      for (let i = 0; i < 20; i++) await status.lookup(address, 'java', { clientKey: 'client-a' });
      await status.lookup(address, 'java', { clientKey: 'client-b' });
      expect(recorded).toEqual(['client-a', 'client-b']);
      clock.advance(61_000);
      await status.lookup(address, 'java', { clientKey: 'client-a' });
      expect(recorded).toEqual(['client-a', 'client-b', 'client-a']);
      // Both clients count for the trend ranking.
      await store.flush();
      const trends = await store.trends(10, null);
      expect(trends.data[0]).toMatchObject({ hostname: '127.0.0.1', port: server.port });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('StatusService ping budget (LookupOptions.beforePing)', () => {
  it('charges only the look-up that pings; a joiner refused by another client\'s budget pings on its own', async () => {
    const own = await startJavaServer({ motd: 'budget' });
    const clock = new FakeClock();
    const status = service(clock);
    const address = `127.0.0.1:${own.port}`;
    const spent = () =>
      new Promise<void>((_resolve, reject) =>
        setTimeout(() => reject(new ObserverError('rate_limited', 429, 'Rate limit exceeded.')), 50),
      );
    let charged = 0;
    const budget = async () => {
      charged += 1;
    };
    const [refused, joined] = await Promise.allSettled([
      status.lookup(address, 'java', { beforePing: spent }),
      status.lookup(address, 'java', { beforePing: budget }),
    ]);
    expect(refused.status).toBe('rejected');
    expect((refused as PromiseRejectedResult).reason).toMatchObject({ code: 'rate_limited', statusCode: 429 });
    expect(joined).toMatchObject({ status: 'fulfilled', value: { cache: 'MISS', status: { online: true } } });
    expect(charged).toBe(1);
    expect(own.connections()).toBe(1);
    // A cached answer costs nothing.
    await status.lookup(address, 'java', { beforePing: spent });
    expect(charged).toBe(1);
    await own.close();
  });
});

describe('StatusService: a joiner refused by another client\'s budget is a new ping, under the ping cap', () => {
  /**
   * MAX_CONCURRENT_PINGS=1. Client A's ping of `target` is refused by A's spent budget while
   * client B has joined it. When B goes on to ping on its own budget, a hanging ping of another
   * server takes the only slot first (started by the test as soon as B's retry reads the
   * cache), so B's retry must be answered as a saturated look-up: stale or 503, no connection.
   */
  async function refusedJoinUnderSaturation(warm: boolean) {
    const own = await startJavaServer({ motd: 'cap' });
    const silent = await startSilentServer();
    const clock = new FakeClock();
    const real = new MemoryStatusCache({ now: () => clock.now() });
    let refused = false;
    let hanging: Promise<unknown> | null = null;
    const target = `127.0.0.1:${own.port}`;
    const cache: StatusCache = {
      get: async (key) => {
        if (refused && hanging === null && key.includes(`|${own.port}`)) {
          hanging = status.lookup(`127.0.0.1:${silent.port}`, 'java').catch(() => null);
          await until(() => status.activePings === 1);
        }
        return real.get(key);
      },
      set: (key, entry, ttl) => real.set(key, entry, ttl),
      close: () => real.close(),
    };
    const status = createStatusService({ config: testConfig({ MAX_CONCURRENT_PINGS: '1', PING_TIMEOUT_MS: '2000' }), clock, icmp: null, cache });
    try {
      const first = warm ? await status.lookup(target, 'java') : null;
      // Past the stale-while-revalidate window: a look-up waits for a ping.
      clock.advance(TTL_MS + STALE_WHILE_REVALIDATE_MS + 1_000);
      const connections = own.connections();
      const spent = () =>
        new Promise<void>((_resolve, reject) =>
          setTimeout(() => {
            refused = true;
            reject(new ObserverError('rate_limited', 429, 'Rate limit exceeded.'));
          }, 50),
        );
      let charged = 0;
      const [a, b] = await Promise.allSettled([
        status.lookup(target, 'java', { beforePing: spent }),
        status.lookup(target, 'java', {
          beforePing: () => {
            charged += 1;
          },
        }),
      ]);
      expect(a).toMatchObject({ status: 'rejected', reason: { code: 'rate_limited' } });
      expect(hanging).not.toBeNull();
      expect(charged).toBe(0);
      expect(own.connections()).toBe(connections);
      expect(silent.accepted()).toBe(1);
      await hanging;
      return { b, first };
    } finally {
      await silent.close();
      await own.close();
    }
  }

  it('without a last success: 503 service_busy', async () => {
    const { b } = await refusedJoinUnderSaturation(false);
    expect(b).toMatchObject({ status: 'rejected', reason: { code: 'service_busy', statusCode: 503 } });
  });

  it('with a success under 24 hours: that success, stale', async () => {
    const { b, first } = await refusedJoinUnderSaturation(true);
    expect(b).toMatchObject({ status: 'fulfilled', value: { cache: 'STALE', status: { stale: true, online: true } } });
    expect((b as PromiseFulfilledResult<{ status: { checked_at: string } }>).value.status.checked_at).toBe(first!.status.checked_at);
  });
});

