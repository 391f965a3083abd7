/**
 * SharedRedis and the Redis adapters against the test's own redis-server, which the tests
 * pause (SIGSTOP), kill (SIGKILL) and restart empty.
 */
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisRateLimitStore } from '../../src/http/rate-limit.js';
import { RedisDailySecret } from '../../src/redis/daily-secret.js';
import { RedisUnavailableError, SharedRedis, type RedisState } from '../../src/redis/shared-redis.js';
import type { CacheEntry } from '../../src/status/cache.js';
import { RedisStatusCache } from '../../src/status/redis-cache.js';
import { FakeClock } from '../support/clock.js';
import { startOwnRedis, type OwnRedis } from '../support/redis-process.js';

let own: OwnRedis;
const opened: SharedRedis[] = [];

beforeAll(async () => {
  own = await startOwnRedis();
});
afterAll(async () => {
  await own.stop();
});
afterEach(async () => {
  own.resume();
  await Promise.all(opened.splice(0).map((r) => r.close()));
  // Every test starts with a running, empty Redis.
  const admin = new Redis(own.url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  admin.on('error', () => {});
  try {
    await admin.connect();
  } catch {
    await own.start();
    await admin.connect();
  }
  await admin.flushall();
  admin.disconnect();
});

async function shared(options: ConstructorParameters<typeof SharedRedis>[1] = {}) {
  const redis = new SharedRedis(own.url, { commandTimeoutMs: 100, probeIntervalMs: 100, openAfterMs: 150, ...options });
  opened.push(redis);
  expect(await redis.ready(5_000)).toBe(true);
  return redis;
}

/** Polls `condition` every 20 ms, at most `ms` milliseconds (and 500 times). */
async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (let i = 0; i < 500 && Date.now() < deadline; i += 1) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

function entry(checkedAt: number): CacheEntry {
  const latest = { status: { online: true, checked_at: new Date(checkedAt).toISOString() } as never, checkedAt };
  return { latest, lastSuccess: latest };
}

describe('SharedRedis', () => {
  it('runs commands while Redis answers', async () => {
    const redis = await shared();
    expect(redis.state).toBe('ok');
    expect(await redis.run((r) => r.set('k', 'v'))).toBe('OK');
    expect(await redis.run((r) => r.get('k'))).toBe('v');
    expect(redis.health()).toBe('ok');
  });

  it('times a command out on a paused Redis, refuses the next ones at once, opens the breaker when the probe fails too, and closes it once Redis answers', async () => {
    const states: RedisState[] = [];
    const redis = await shared({ failureThreshold: 3, onStateChange: (state) => states.push(state) });
    own.pause();
    const first = await redis.run((r) => r.get('k')).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(Error);
    expect((first as Error).message).toMatch(/timed out/i);
    // One timeout is enough: nothing more is sent while a probe finds out whether Redis answers.
    expect(redis.available).toBe(false);
    expect(redis.health()).not.toBe('ok');
    let sent = false;
    const refused = await redis
      .run(async (r) => {
        sent = true;
        return r.get('k');
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RedisUnavailableError);
    expect(sent).toBe(false);
    expect(await redis.tryRun((r) => r.get('k'), () => 'local')).toBe('local');
    expect(redis.counters).toMatchObject({ timedOut: 1, refused: 2 });
    // The probe gets no answer either: the breaker opens.
    expect(await until(() => redis.state === 'down', 2_000)).toBe(true);
    expect(redis.health()).toBe('down');
    expect(states).toEqual(['ok', 'down']);
    expect(redis.counters.timedOut).toBe(1);

    own.resume();
    expect(await until(() => redis.available, 5_000)).toBe(true);
    expect(await redis.run((r) => r.get('k'))).toBeNull();
    expect(states.slice(-2)).toEqual(['down', 'ok']);
  });

  it('after one timeout, resumes without a change of state when Redis answers the probe (a busy Redis or process)', async () => {
    const states: RedisState[] = [];
    const redis = await shared({ onStateChange: (state) => states.push(state) });
    let release!: () => void;
    // A command whose reply comes after its timeout (a busy Redis, or a busy process): here a
    // real GET held back until released.
    const late = redis
      .run(async (r) => {
        await new Promise<void>((resolve) => (release = resolve));
        return r.get('k');
      })
      .catch((error: unknown) => error);
    expect(await late).toBeInstanceOf(RedisUnavailableError);
    // Redis itself answers the probe at once: sending resumes, and nobody hears of a failure.
    expect(await until(() => redis.available, 2_000)).toBe(true);
    expect(redis.state).toBe('ok');
    // Only the first connection's 'ok'.
    expect(states).toEqual(['ok']);
    expect(redis.counters).toMatchObject({ timedOut: 1 });
    expect(await redis.run((r) => r.set('k', 'v'))).toBe('OK');
    release();
  });

  it('opens on SIGKILL at once, and returns to shared mode when an empty Redis is back', async () => {
    const redis = await shared();
    await redis.run((r) => r.set('before', '1'));
    await own.kill();
    expect(await until(() => !redis.available, 1_000)).toBe(true);
    const failed = await redis.run((r) => r.get('before')).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(RedisUnavailableError);

    await own.start();
    expect(await until(() => redis.available, 5_000)).toBe(true);
    expect(await redis.run((r) => r.get('before'))).toBeNull();
    expect(await redis.run((r) => r.set('after', '1'))).toBe('OK');
  });

  it('starts on its fallbacks when Redis is not there, and switches over when it comes', async () => {
    await own.kill();
    const redis = new SharedRedis(own.url, { commandTimeoutMs: 100, probeIntervalMs: 100 });
    opened.push(redis);
    expect(await redis.ready(300)).toBe(false);
    expect(redis.state).toBe('down');
    expect(await redis.tryRun((r) => r.ping(), () => 'fallback')).toBe('fallback');
    await own.start();
    expect(await until(() => redis.available, 5_000)).toBe(true);
  });
});

describe('Redis rate-limit store', () => {
  it('near the limit, counts every hit in Redis: one count between instances', async () => {
    const [a, b] = [await shared(), await shared()];
    const [ra, rb] = [new RedisRateLimitStore(a), new RedisRateLimitStore(b)];
    try {
      expect((await ra.hit('status:c', 60_000, 3)).count).toBe(1);
      expect((await rb.hit('status:c', 60_000, 3)).count).toBe(2);
      expect((await ra.hit('status:c', 60_000, 3)).count).toBe(3);
      expect((await rb.hit('status:c', 60_000, 3)).count).toBe(4);
    } finally {
      ra.close();
      rb.close();
    }
  });

  it('far from the limit, counts locally and adds the hits to Redis in batches', async () => {
    const [a, b] = [await shared(), await shared()];
    const [ra, rb] = [new RedisRateLimitStore(a), new RedisRateLimitStore(b)];
    const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await a.run((r) => r.info('commandstats')))?.[1] ?? 0);
    try {
      const before = await calls();
      for (let i = 0; i < 100; i += 1) {
        await ra.hit('status:batch', 60_000, 1_000);
        await rb.hit('status:batch', 60_000, 1_000);
      }
      const counter = async () => Number(await a.run((r) => r.get('observer:rl:status:batch')));
      const end = Date.now() + 5_000;
      for (let i = 0; i < 250 && Date.now() < end && (await counter()) < 200; i += 1) await new Promise((r) => setTimeout(r, 20));
      expect(await counter()).toBe(200);
      // A hit past a quarter of the limit is added in Redis at once, and answers the shared count.
      expect((await ra.hit('status:batch', 60_000, 300)).count).toBe(201);
      expect((await calls()) - before).toBeLessThan(50);
    } finally {
      ra.close();
      rb.close();
    }
  });

  it('counts locally while Redis is down: the limit still holds per instance', async () => {
    const a = await shared();
    const ra = new RedisRateLimitStore(a);
    try {
      expect((await ra.hit('status:d', 60_000, 3)).count).toBe(1);
      own.pause();
      // While the command times out, and once the breaker is open, counts are local: they
      // still grow per instance, so the limit still holds.
      const local = [];
      for (let i = 0; i < 5; i += 1) local.push((await ra.hit('status:d', 60_000, 3)).count);
      expect(local).toEqual([1, 2, 3, 4, 5]);
      expect(a.available).toBe(false);
    } finally {
      ra.close();
    }
  });
});

describe('Redis rate-limit store, flushing', () => {
  const counter = async (redis: SharedRedis, key: string) => Number(await redis.run((r) => r.get(`observer:rl:${key}`)));

  it('sends the pending hits of a window that has just ended here before forgetting it', async () => {
    const a = await shared();
    const clock = new FakeClock();
    const ra = new RedisRateLimitStore(a, undefined, () => clock.now());
    try {
      // Another instance opened the shared window; this one counts two hits locally, and its
      // own idea of the window ends before the next flush.
      await a.run((r) => r.set('observer:rl:status:ending', '5', 'PX', 60_000));
      ra.hit('status:ending', 60_000, 1_000);
      ra.hit('status:ending', 60_000, 1_000);
      clock.advance(60_000);
      expect(await until(() => false, 400)).toBe(false);
      expect(await counter(a, 'status:ending')).toBe(7);
    } finally {
      ra.close();
    }
  });

  it('keeps the hits of a flush whose commands Redis fails, and sends them with the next flush', async () => {
    // A Redis that fails the first flush's command with an error reply, then counts.
    let failures = 1;
    const counted: number[] = [];
    const fake = await fakeRedis((args) => {
      if (args[0] === 'SCRIPT') return '*1\r\n:1\r\n';
      if (args[0] !== 'EVALSHA') return '+PONG\r\n';
      if (failures-- > 0) return '-ERR out of memory\r\n';
      counted.push(Number(args[5]));
      return `*2\r\n:${counted.reduce((x, y) => x + y, 0)}\r\n:60000\r\n`;
    });
    const redis = new SharedRedis(fake.url, { commandTimeoutMs: 1_000 });
    const store = new RedisRateLimitStore(redis);
    try {
      expect(await redis.ready(5_000)).toBe(true);
      for (let i = 0; i < 5; i += 1) store.hit('status:midflush', 60_000, 1_000);
      expect(await until(() => counted.length > 0, 5_000)).toBe(true);
      expect(failures).toBe(-1);
      expect(counted).toEqual([5]);
    } finally {
      store.close();
      await redis.close();
      await fake.close();
    }
  });

  it('keeps at most its cap of client windows, sending the hits of those it lets go', async () => {
    const a = await shared();
    const ra = new RedisRateLimitStore(a, undefined, Date.now, { maxClients: 10 });
    try {
      for (let i = 0; i < 50; i += 1) ra.hit(`status:many${i}`, 60_000, 1_000);
      expect(ra.size).toBeLessThanOrEqual(10);
      let sent = 0;
      for (let i = 0; i < 100 && sent < 50; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        sent = (await a.run((r) => r.keys('observer:rl:status:many*'))).length;
      }
      expect(sent).toBe(50);
    } finally {
      ra.close();
    }
  });
});

describe('Redis status cache', () => {
  it('serves a hot target from its L1 without a Redis round trip', async () => {
    const redis = await shared();
    const cache = new RedisStatusCache(redis, { prefix: 'observer:l1:' });
    const other = new RedisStatusCache(await shared(), { prefix: 'observer:l1:' });
    await other.set('java|hot|', entry(1), 60_000);
    const gets = async () => {
      const info = await redis.run((r) => r.info('commandstats'));
      return Number(/cmdstat_get:calls=(\d+)/.exec(info)?.[1] ?? 0);
    };
    const before = await gets();
    for (let i = 0; i < 20; i += 1) expect((await cache.get('java|hot|'))?.latest.checkedAt).toBe(1);
    expect((await gets()) - before).toBe(1);
    // Skipping the L1 reads Redis.
    await other.set('java|hot|', entry(2), 60_000);
    expect((await cache.get('java|hot|', { skipL1: true }))?.latest.checkedAt).toBe(2);
  });

  it('releases a claim only for its owner, and reads the entry with the claim', async () => {
    const [a, b] = [new RedisStatusCache(await shared(), { prefix: 'observer:claim:' }), new RedisStatusCache(await shared(), { prefix: 'observer:claim:' })];
    const { token, entry: none } = await a.claim('java|x|', 10_000);
    expect(token).not.toBeNull();
    expect(none).toBeUndefined();
    expect((await b.claim('java|x|', 10_000)).token).toBeNull();
    // A release with another token (a late owner whose claim expired) leaves the claim alone.
    await b.release('java|x|', 'not-the-owner');
    await b.set('java|x|', entry(3), 60_000, 'not-the-owner');
    expect((await b.claim('java|x|', 10_000)).token).toBeNull();
    // The owner's write releases it; the next claim reads what was written.
    await a.set('java|x|', entry(4), 60_000, token!);
    const next = await b.claim('java|x|', 10_000);
    expect(next.token).not.toBeNull();
    expect(next.entry?.latest.checkedAt).toBe(4);
    await b.release('java|x|', next.token!);
    expect((await a.claim('java|x|', 10_000)).token).not.toBeNull();
  });

  it('falls back to its local copy while Redis is down, and claims locally', async () => {
    const redis = await shared({ failureThreshold: 1 });
    const cache = new RedisStatusCache(redis, { prefix: 'observer:fallback:' });
    await cache.set('java|a|', entry(5), 60_000);
    await own.kill();
    expect(await until(() => !redis.available, 1_000)).toBe(true);
    expect((await cache.get('java|a|', { skipL1: true }))?.latest.checkedAt).toBe(5);
    await cache.set('java|b|', entry(6), 60_000);
    expect((await cache.get('java|b|', { skipL1: true }))?.latest.checkedAt).toBe(6);
    expect(await cache.claim('java|b|', 1_000)).toEqual({ token: 'local', entry: expect.objectContaining({ latest: expect.objectContaining({ checkedAt: 6 }) }) });
  });
});

describe('daily secret over SharedRedis', () => {
  it('is the same for two instances, and rejects while Redis is down', async () => {
    const [a, b] = [new RedisDailySecret(await shared()), new RedisDailySecret(await shared())];
    const day = Date.parse('2026-11-23T00:00:00Z');
    const end = Date.now() + 60_000;
    expect(await a.secretFor(day, end)).toBe(await b.secretFor(day, end));
    await own.kill();
    await expect(a.secretFor(day, end)).rejects.toBeInstanceOf(Error);
  });
});

describe('Redis status cache with a corrupt value', () => {
  it('reads a value that is not an entry as a miss, and overwrites it', async () => {
    const redis = await shared();
    const cache = new RedisStatusCache(redis, { prefix: 'observer:corrupt:' });
    for (const [key, value] of [['java|a|', '{"latest":'], ['java|b|', 'not json'], ['java|c|', '{"latest":null}'], ['java|d|', '42']]) {
      await redis.run((r) => r.set(`observer:corrupt:${key!}`, value!));
      expect(await cache.get(key!)).toBeUndefined();
    }
    await cache.set('java|a|', entry(7), 60_000);
    expect((await cache.get('java|a|', { skipL1: true }))?.latest.checkedAt).toBe(7);
  });
});

/**
 * A Redis stand-in that answers only when told (replies in order, as Redis does): to put a
 * late reply and a second timeout exactly where a busy Redis would.
 */
async function heldRedis() {
  return fakeRedis(() => null);
}

/**
 * A Redis stand-in answering each command with `answer(args)` (a RESP reply), or holding it
 * while that returns null; connection set-up (INFO, CLIENT) is answered at once.
 */
async function fakeRedis(answer: (args: string[]) => string | null) {
  const held: Array<{ command: string; socket: Socket }> = [];
  const server = createNetServer((socket) => {
    let buffer = '';
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      for (;;) {
        const parsed = parseCommand(buffer);
        if (parsed === null) return;
        buffer = buffer.slice(parsed.length);
        const name = parsed.args[0]!.toUpperCase();
        if (name === 'INFO') socket.write('$21\r\n# Server\r\nloading:0\r\n\r\n');
        else if (name === 'CLIENT' || name === 'SELECT') socket.write('+OK\r\n');
        else {
          const reply = answer([name, ...parsed.args.slice(1)]);
          if (reply === null || held.length > 0) held.push({ command: name, socket });
          else socket.write(reply);
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    /** Answers the oldest command still waiting. */
    replyNext(reply: string) {
      held.shift()!.socket.write(reply);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function parseCommand(text: string): { args: string[]; length: number } | null {
  const lines = text.split('\r\n');
  if (lines.length < 2 || !lines[0]!.startsWith('*')) return null;
  const count = Number(lines[0]!.slice(1));
  if (lines.length < 1 + count * 2 + 1) return null;
  const args: string[] = [];
  let length = lines[0]!.length + 2;
  for (let i = 0; i < count; i += 1) {
    args.push(lines[2 + i * 2]!);
    length += lines[1 + i * 2]!.length + 2 + lines[2 + i * 2]!.length + 2;
  }
  return { args, length };
}

describe('SharedRedis with a probe in flight', () => {
  it('a second timeout while the first one’s probe is out awaits that probe instead of opening the breaker', async () => {
    const fake = await heldRedis();
    const states: RedisState[] = [];
    const timeoutMs = 1_000;
    const redis = new SharedRedis(fake.url, { commandTimeoutMs: timeoutMs, onStateChange: (state) => states.push(state) });
    try {
      expect(await redis.ready(5_000)).toBe(true);
      states.length = 0;
      const first = redis.run((r) => r.get('a')).catch((error: unknown) => error);
      // Sent half a timeout later, while sending is still allowed: it times out half a timeout
      // after the first, when the first one's probe is still waiting.
      await new Promise((resolve) => setTimeout(resolve, timeoutMs / 2));
      const second = redis.run((r) => r.get('c')).catch((error: unknown) => error);
      expect(await first).toBeInstanceOf(RedisUnavailableError);
      expect(await until(() => fake.held.length === 3, 2_000)).toBe(true);
      expect(fake.held.map((h) => h.command)).toEqual(['GET', 'GET', 'PING']);
      // The first command's late reply resumes sending; the probe is still out.
      fake.replyNext('$-1\r\n');
      expect(await until(() => redis.available, 2_000)).toBe(true);
      expect(await second).toBeInstanceOf(RedisUnavailableError);
      // Redis answers the second command and the probe: it was only slow.
      fake.replyNext('$-1\r\n');
      fake.replyNext('+PONG\r\n');
      expect(await until(() => redis.available, 2_000)).toBe(true);
      expect(states).toEqual([]);
      expect(redis.state).toBe('ok');
    } finally {
      await redis.close();
      await fake.close();
    }
  });
});
