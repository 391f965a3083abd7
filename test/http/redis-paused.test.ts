/**
 * A paused Redis (SIGSTOP: connections stay open, nothing answers) under a cold status request
 * through the real app: the request answers from the target, and at most one of its Redis
 * commands waits the whole REDIS_COMMAND_TIMEOUT_MS; the ones after it are refused at once and
 * served locally. Counted by SharedRedis itself, not timed. Then SIGCONT: shared mode again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { RedisRateLimitStore } from '../../src/http/rate-limit.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startOwnRedis, type OwnRedis } from '../support/redis-process.js';

let dir: string;
let own: OwnRedis;
let server: RunningJavaServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'observer-redis-paused-'));
  own = await startOwnRedis();
  server = await startJavaServer({ motd: 'paused redis', onlinePlayers: 2 });
});
afterAll(async () => {
  own.resume();
  await server.close();
  await own.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Polls `condition` every 20 ms, at most 250 times and `ms` milliseconds. */
async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (let i = 0; i < 250 && Date.now() < end; i += 1) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

it('answers a cold status request while Redis is paused, with at most one command waiting the whole timeout', async () => {
  const { app, redis } = await composeApp(
    testConfig({
      DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`,
      REDIS_URL: own.url,
      // A limit this low is counted in Redis on every hit: the request's first Redis command
      // is the rate-limit script, then the cache read, the claim, and the write.
      RATE_LIMIT_STATUS: '3',
    }),
    { logger: false, icmp: null },
  );
  try {
    expect(redis!.available).toBe(true);
    own.pause();
    const before = redis!.counters;
    const res = await app.inject({ method: 'GET', url: `/api/v1/status/127.0.0.1:${server.port}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ online: true, players: { online: 2 } });
    const after = redis!.counters;
    // The first command meets the paused Redis and waits out its timeout; every later one is
    // refused without being sent.
    expect(after.timedOut - before.timedOut).toBe(1);
    expect(after.refused - before.refused).toBeGreaterThan(0);
    expect(redis!.available).toBe(false);
    // The probe gets no answer either: the instance is in local mode, and health says so.
    expect(await until(() => redis!.state === 'down', 5_000)).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/api/v1/status' })).json()).toMatchObject({ status: 'OK', redis: 'down' });

    own.resume();
    expect(await until(() => redis!.available, 5_000)).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/api/v1/status' })).json()).toMatchObject({ redis: 'ok' });
    expect(redis!.counters.timedOut - before.timedOut).toBe(1);
  } finally {
    await app.close();
  }
});

it('makes at most 4 Redis round trips for a cold status request, its rate limit included', async () => {
  const { app, redis } = await composeApp(
    testConfig({ DATABASE_URL: `sqlite:${join(dir, 'round-trips.db')}`, REDIS_URL: own.url, RATE_LIMIT_STATUS: '3' }),
    { logger: false, icmp: null },
  );
  try {
    expect(redis!.available).toBe(true);
    // Each run() is one round trip (a pipeline or a script is one too); tryRun goes through it.
    // The rate-limit flush (one pipeline every 100 ms for all clients' locally counted hits)
    // is not the request's: it calls run() before its first await, so a flag marks its call.
    const prototype = RedisRateLimitStore.prototype as unknown as { flush(): Promise<void> };
    const flush = prototype.flush;
    let flushing = false;
    const flushSpy = vi.spyOn(prototype, 'flush').mockImplementation(function (this: unknown) {
      flushing = true;
      try {
        return flush.call(this);
      } finally {
        flushing = false;
      }
    });
    const own: unknown[] = [];
    const run = redis!.run.bind(redis);
    vi.spyOn(redis!, 'run').mockImplementation((command) => {
      if (!flushing) own.push(command);
      return run(command);
    });
    try {
      const res = await app.inject({ method: 'GET', url: `/api/v1/status/127.0.0.1:${server.port}` });
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-cache']).toBe('MISS');
    } finally {
      flushSpy.mockRestore();
    }
    // The rate-limit script; the cache read; the claim with a second read; the write with the release.
    expect(own.length).toBeGreaterThan(0);
    expect(own.length).toBeLessThanOrEqual(4);
  } finally {
    await app.close();
  }
});
