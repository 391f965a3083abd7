/**
 * Flap damping (docs/api.md, "Flap damping"): a real minecraft-protocol server answers, then is
 * stopped; the status route answers its last success, stale and with `failing`, until the
 * DAMPING_FAILURES-th failure in a row or DAMPING_MINUTES, then offline with its error_code.
 * Every failure is still recorded. A fake clock moves past the cache's TTL; pings are real.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { openStore } from '../../src/store/index.js';
import type { HistoryStore } from '../../src/store/types.js';
import { SharedRedis } from '../../src/redis/shared-redis.js';
import { RedisStatusCache } from '../../src/status/redis-cache.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer } from '../support/minecraft.js';
import { openApiValidator } from '../support/openapi.js';
import { REDIS_URL } from '../support/services.js';

const TTL_MS = 60_000;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** The app over a fake clock and a fresh SQLite store whose recorded checks are kept in `checks`. */
async function setup(env: Record<string, string>, sharedCache?: (clock: FakeClock) => RedisStatusCache) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-damping-'));
  const clock = new FakeClock();
  const cache = sharedCache?.(clock);
  const config = testConfig({ DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`, PING_TIMEOUT_MS: '1000', ...env });
  const store = (await openStore(config, clock)) as HistoryStore;
  const checks: boolean[] = [];
  const recordCheck = store.recordCheck.bind(store);
  store.recordCheck = (check) => {
    checks.push(check.online);
    recordCheck(check);
  };
  const status = createStatusService({ config, clock, icmp: null, store, ...(cache ? { cache } : {}) });
  const app = await buildApp({ config, clock, status, logger: false });
  await app.ready();
  cleanups.push(async () => {
    await app.close();
    await status.recorded();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const validate = await openApiValidator(app);
  const get = async (address: string) => {
    const res = await app.inject({ method: 'GET', url: `/api/v1/status/${address}` });
    const body = res.json();
    expect(validate('ServerStatus', body)).toEqual([]);
    return { cache: res.headers['x-cache'], body };
  };
  return { clock, get, checks, status };
}

/** Waits (real time) until `check` holds: a stale answer's background refresh runs on a real socket. */
async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function stoppedServer() {
  const server = await startJavaServer({ motd: 'damped', onlinePlayers: 4 });
  return { address: `127.0.0.1:${server.port}`, stop: () => server.close() };
}

describe('flap damping', () => {
  it('serves the last success with failing until the third failure in a row, then offline with error_code', async () => {
    const { clock, get, checks, status } = await setup({ DAMPING_FAILURES: '3', DAMPING_MINUTES: '5' });
    const server = await stoppedServer();
    const online = await get(server.address);
    expect(online.body).toMatchObject({ online: true, stale: false, error_code: null });
    expect(online.body).not.toHaveProperty('failing');
    await server.stop();

    // Past the TTL: the success is served stale while a refresh runs, which fails (failure 1).
    clock.advance(TTL_MS + 1_000);
    expect((await get(server.address)).cache).toBe('STALE');
    await until(async () => (await get(server.address)).body.failing !== undefined);
    const first = await get(server.address);
    expect(first.cache).toBe('STALE');
    expect(first.body).toMatchObject({
      online: true,
      stale: true,
      checked_at: online.body.checked_at,
      players: { online: 4 },
      failing: { failures: 1, error: 'connection refused', error_code: 'connection_refused' },
    });
    const since = first.body.failing.since;
    expect(Date.parse(since)).toBe(clock.now());

    // The failure expires: the next look-up pings again (failure 2), still damped.
    clock.advance(TTL_MS + 1_000);
    const second = await get(server.address);
    expect(second.body).toMatchObject({ online: true, stale: true, failing: { since, failures: 2, error_code: 'connection_refused' } });

    // The third failure in a row ends damping.
    clock.advance(TTL_MS + 1_000);
    const third = await get(server.address);
    expect(third.cache).toBe('MISS');
    expect(third.body).toMatchObject({ online: false, stale: false, error: 'connection refused', error_code: 'connection_refused' });
    expect(third.body).not.toHaveProperty('failing');
    expect((await get(server.address)).body.online).toBe(false);

    // Every ping is in the history, failures too.
    await status.recorded();
    expect(checks).toEqual([true, false, false, false]);
  });

  it('ends after DAMPING_MINUTES whatever the count, and needs a recent success to start', async () => {
    const { clock, get } = await setup({ DAMPING_FAILURES: '100', DAMPING_MINUTES: '1', STATUS_CACHE_TTL: '10' });
    const server = await stoppedServer();
    await get(server.address);
    await server.stop();
    // A success older than the TTL and the stale window is no evidence the server is up: the
    // first failure after it is answered as it is.
    clock.advance(10_001 + 5 * 60_000);
    expect((await get(server.address)).body.online).toBe(false);

    const fresh = await setup({ DAMPING_FAILURES: '100', DAMPING_MINUTES: '1', STATUS_CACHE_TTL: '10' });
    const again = await stoppedServer();
    await fresh.get(again.address);
    await again.stop();
    fresh.clock.advance(10_001);
    await fresh.get(again.address);
    await until(async () => (await fresh.get(again.address)).body.failing !== undefined);
    fresh.clock.advance(30_000);
    expect((await fresh.get(again.address)).body).toMatchObject({ online: true, failing: { failures: 2 } });
    fresh.clock.advance(31_000);
    expect((await fresh.get(again.address)).body).toMatchObject({ online: false, error_code: 'connection_refused' });
  });

  it.each([
    ['1', false],
    ['2', true],
  ] as const)('DAMPING_FAILURES=%s: the first failure after a success is damped: %s', async (failures, damped) => {
    const { clock, get } = await setup({ DAMPING_FAILURES: failures });
    const server = await stoppedServer();
    await get(server.address);
    await server.stop();
    clock.advance(TTL_MS + 1_000);
    await get(server.address);
    // Once the stale answer's refresh has failed: answered from that failure, damped or not.
    await until(async () => {
      const answer = await get(server.address);
      return answer.cache === 'HIT' || answer.body.failing !== undefined;
    });
    expect((await get(server.address)).body).toMatchObject({ online: damped, error_code: damped ? null : 'connection_refused' });
  });

  it('instances sharing Redis share the streak', async () => {
    const redis = new SharedRedis(REDIS_URL);
    await redis.ready();
    cleanups.push(() => redis.close());
    const prefix = `observer:test:damping:${process.pid}:${Math.random().toString(36).slice(2)}:`;
    const shared = (clock: FakeClock) => new RedisStatusCache(redis, { prefix, now: () => clock.now() });
    const a = await setup({ DAMPING_FAILURES: '3' }, shared);
    const b = await setup({ DAMPING_FAILURES: '3' }, shared);
    const server = await stoppedServer();
    await a.get(server.address);
    await server.stop();
    for (const { clock } of [a, b]) clock.advance(TTL_MS + 1_000);
    await a.get(server.address);
    await until(async () => (await a.get(server.address)).body.failing !== undefined);
    // Instance b reads a's failure and its streak from Redis (its L1 trusts a read for 1 s).
    for (const { clock } of [a, b]) clock.advance(1_001);
    expect((await b.get(server.address)).body).toMatchObject({ online: true, stale: true, failing: { failures: 1 } });
    for (const { clock } of [a, b]) clock.advance(TTL_MS);
    expect((await b.get(server.address)).body).toMatchObject({ failing: { failures: 2 } });
    for (const { clock } of [a, b]) clock.advance(TTL_MS + 1_001);
    expect((await a.get(server.address)).body).toMatchObject({ online: false, error_code: 'connection_refused' });
    // b answers a's failure from Redis, its error_code with it.
    for (const { clock } of [a, b]) clock.advance(1_001);
    const fromRedis = await b.get(server.address);
    expect(fromRedis.cache).toBe('HIT');
    expect(fromRedis.body).toMatchObject({ online: false, error: 'connection refused', error_code: 'connection_refused' });
  });
});
