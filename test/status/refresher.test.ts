/**
 * Background refresher against real Java fixture servers on loopback: most looked-up first,
 * once per TTL, forgetting targets out of the window, sharing work through the real Redis, and
 * stopping cleanly. Fake clock for the service and the refresher; real sockets.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedRedis } from '../../src/redis/shared-redis.js';
import { BackgroundRefresher, createStatusService } from '../../src/status/index.js';
import { openStore } from '../../src/store/index.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { REDIS_URL } from '../support/services.js';

const TTL_SECONDS = 60;
let popular: RunningJavaServer;
let quiet: RunningJavaServer;
const redis = new SharedRedis(REDIS_URL);

beforeAll(async () => {
  popular = await startJavaServer({ motd: 'popular' });
  quiet = await startJavaServer({ motd: 'quiet' });
  expect(await redis.ready(5_000)).toBe(true);
});
afterAll(async () => {
  await popular.close();
  await quiet.close();
  await redis.close();
});

function setup(options: { redis?: SharedRedis; prefix?: string; clock?: FakeClock; maxBytes?: number } = {}) {
  const clock = options.clock ?? new FakeClock();
  const config = testConfig({ STATUS_CACHE_TTL: String(TTL_SECONDS) });
  const service = createStatusService({ config, clock, icmp: null });
  const refresher = new BackgroundRefresher({
    status: service,
    clock,
    windowMinutes: 30,
    pingsPerMinute: 60,
    ttlSeconds: TTL_SECONDS,
    redis: options.redis ?? null,
    ...(options.prefix ? { redisPrefix: options.prefix } : {}),
    ...(options.maxBytes !== undefined ? { maxBytes: options.maxBytes } : {}),
  });
  return { clock, status: refresher.tracking(service), refresher };
}

/** Waits (bounded) for `server` to have accepted `count` connections. */
async function connectionsReach(server: RunningJavaServer, count: number): Promise<number> {
  for (let i = 0; i < 200 && server.connections() < count; i++) await sleep(10);
  return server.connections();
}

describe('BackgroundRefresher', () => {
  it('re-checks the most looked-up server first, each at most once per TTL', async () => {
    const { clock, status, refresher } = setup();
    for (let i = 0; i < 3; i++) await status.lookup(`127.0.0.1:${popular.port}`, 'java');
    await status.lookup(`127.0.0.1:${quiet.port}`, 'java');
    const [p, q] = [popular.connections(), quiet.connections()];
    expect(await refresher.tick()).toBe(false); // everything was checked less than a TTL ago

    clock.advance(TTL_SECONDS * 1000);
    expect(await refresher.tick()).toBe(true);
    expect(await connectionsReach(popular, p + 1)).toBe(p + 1);
    expect(quiet.connections()).toBe(q);
    expect(await refresher.tick()).toBe(true);
    expect(await connectionsReach(quiet, q + 1)).toBe(q + 1);
    expect(await refresher.tick()).toBe(false);
    expect(refresher.refreshed).toBe(2);
  });

  it('records its checks (fresh trends) without counting them as users\' server queries', async () => {
    const clock = new FakeClock();
    const dir = mkdtempSync(join(tmpdir(), 'observer-refresher-'));
    const store = await openStore({ database: { kind: 'sqlite', path: join(dir, 'db.sqlite') }, checkRetentionDays: 30 }, clock, { statsCacheMs: 0 });
    try {
      const config = testConfig({ STATUS_CACHE_TTL: String(TTL_SECONDS) });
      const service = createStatusService({ config, clock, store, icmp: null });
      const refresher = new BackgroundRefresher({ status: service, clock, windowMinutes: 30, pingsPerMinute: 60, ttlSeconds: TTL_SECONDS });
      await refresher.tracking(service).lookup(`127.0.0.1:${popular.port}`, 'java');
      clock.advance(TTL_SECONDS * 1000);
      expect(await refresher.tick()).toBe(true);
      let stats = await store.stats();
      for (let i = 0; i < 200 && stats.totalChecks < 2; i++) {
        await sleep(10);
        await store.flush();
        stats = await store.stats();
      }
      expect(stats.totalChecks).toBe(2);
      expect(stats.serverQueries).toBe(1);
      expect(stats.recentChecks[0]?.checked_at).toBe(new Date(clock.now()).toISOString());
    } finally {
      await store.close();
    }
  });

  it('tracks targets within its byte budget, forgetting the least recently looked up first', async () => {
    // Room for one target: the popular one, looked up first, is pushed out by the quiet one.
    const { clock, status, refresher } = setup({ maxBytes: 300 });
    for (let i = 0; i < 3; i++) await status.lookup(`127.0.0.1:${popular.port}`, 'java');
    await status.lookup(`127.0.0.1:${quiet.port}`, 'java');
    const [p, q] = [popular.connections(), quiet.connections()];
    clock.advance(TTL_SECONDS * 1000);
    expect(await refresher.tick()).toBe(true);
    expect(await connectionsReach(quiet, q + 1)).toBe(q + 1);
    expect(await refresher.tick()).toBe(false);
    expect(popular.connections()).toBe(p);
  });

  it('forgets servers not looked up within the window', async () => {
    const { clock, status, refresher } = setup();
    await status.lookup(`127.0.0.1:${popular.port}`, 'java');
    clock.advance(31 * 60_000);
    expect(await refresher.tick()).toBe(false);
  });

  it('shares the work across instances through Redis: one refresh per target per window', async () => {
    const clock = new FakeClock();
    const prefix = `observer:test:refresh:${randomUUID()}:`;
    const a = setup({ redis, prefix, clock });
    const b = setup({ redis, prefix, clock });
    await a.status.lookup(`127.0.0.1:${quiet.port}`, 'java');
    await b.status.lookup(`127.0.0.1:${quiet.port}`, 'java');
    clock.advance(TTL_SECONDS * 1000);
    const before = quiet.connections();
    const results = [await a.refresher.tick(), await b.refresher.tick()];
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await connectionsReach(quiet, before + 1)).toBe(before + 1);
    await sleep(100);
    expect(quiet.connections()).toBe(before + 1);
  });

  it('runs on its own once started and stops cleanly', async () => {
    const clock = new FakeClock();
    const config = testConfig();
    const service = createStatusService({ config, clock, icmp: null });
    const refresher = new BackgroundRefresher({ status: service, clock, windowMinutes: 30, pingsPerMinute: 6000, ttlSeconds: 1 });
    refresher.noteLookup(`127.0.0.1:${quiet.port}`, 'java');
    clock.advance(1000);
    refresher.start();
    for (let i = 0; i < 300 && refresher.refreshed === 0; i++) await sleep(10);
    expect(refresher.refreshed).toBe(1);
    await refresher.stop();
    clock.advance(5000);
    await sleep(100);
    expect(refresher.refreshed).toBe(1);
  });
});
