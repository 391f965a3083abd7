/**
 * Privacy, end to end: the whole app (status with and without `?query=true`, bulk, history,
 * images, widget, trends, stats, Prometheus probes, the pages and their files) on a real SQLite file, with a log
 * file at trace level with an access line per request, and with the real Redis (shared cache,
 * rate limits, the day's secret). Requests carry a distinctive client address
 * (X-Forwarded-For with TRUST_PROXY on) and user agent; afterwards neither appears in any byte
 * of the database files or the log, nor in any key or value in Redis.
 */
import { randomInt } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { DEFAULT_WEB_DIR, type WebManifest } from '../../src/http/routes/pages.js';
import { testConfig } from '../support/app.js';
import { startJavaServer } from '../support/minecraft.js';
import { REDIS_URL } from '../support/services.js';

// Redis is shared with other test runs: this run's address and agent are its own.
const IP = `203.0.113.${randomInt(10, 250)}`;
const UA = `PrivacyProbe/7.1 (observer-e2e; marker-${randomInt(1e9).toString(36)})`;
const dir = mkdtempSync(join(tmpdir(), 'observer-privacy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function assertAbsent(label: string, bytes: Buffer, secrets: string[]) {
  for (const secret of secrets) {
    for (const encoding of ['utf8', 'utf16le'] as const) {
      expect(bytes.includes(Buffer.from(secret, encoding)), `${secret} (${encoding}) in ${label}`).toBe(false);
    }
  }
}

/** Every key in Redis with its value(s), as bytes, whatever the type. */
async function redisContents(redis: Redis): Promise<Array<{ key: Buffer; values: Buffer[] }>> {
  const out: Array<{ key: Buffer; values: Buffer[] }> = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scanBuffer(cursor, 'COUNT', 1000);
    cursor = String(next);
    for (const key of keys) {
      const type = await redis.type(key);
      let values: Buffer[] = [];
      if (type === 'string') values = [(await redis.getBuffer(key)) ?? Buffer.alloc(0)];
      else if (type === 'hash') values = Object.entries(await redis.hgetallBuffer(key)).flatMap(([k, v]) => [Buffer.from(k), v]);
      else if (type === 'list') values = await redis.lrangeBuffer(key, 0, -1);
      else if (type === 'set') values = await redis.smembersBuffer(key);
      else if (type === 'zset') values = await redis.zrangeBuffer(key, 0, -1);
      else if (type !== 'none') values = [Buffer.from(`unread ${type}`)];
      out.push({ key, values });
    }
  } while (cursor !== '0');
  return out;
}

describe('privacy', () => {
  it('keeps neither client IP nor user agent in the database, the log or Redis, on every kind of route', async () => {
    const server = await startJavaServer({ motd: 'privacy', onlinePlayers: 2 });
    const db = join(dir, 'observer.db');
    const logPath = join(dir, 'observer.log');
    const log = createWriteStream(logPath);
    const { app, store, status, redis } = await composeApp(
      testConfig({ DATABASE_URL: `sqlite:${db}`, REDIS_URL, TRUST_PROXY: 'true', LOG_LEVEL: 'trace', LOG_REQUESTS: 'true' }),
      { logger: { level: 'trace', stream: log } },
    );
    const manifest = JSON.parse(readFileSync(join(DEFAULT_WEB_DIR, 'manifest.json'), 'utf8')) as WebManifest;
    const inspector = new Redis(REDIS_URL);
    try {
      expect(redis).not.toBeNull();
      const target = `127.0.0.1:${server.port}`;
      const headers = { 'x-forwarded-for': IP, 'user-agent': UA };
      const get: Array<[string, number]> = [
        [`/api/v1/status/${target}`, 200],
        [`/api/v1/status/${target}?legacy=true`, 200],
        [`/api/v1/status/${target}?query=true`, 200],
        [`/api/v1/status/${target}?query=true&queryPort=${server.port}`, 200],
        ['/api/v1/status/missing.observer.test', 404],
        ['/api/v1/status/not%20valid', 400],
        // The history of the server just looked up (its check counts at once), its ranges, an unknown one.
        [`/api/v1/history/${target}`, 200],
        [`/api/v1/history/${target}?range=7d`, 200],
        [`/api/v1/history/${target}?range=30d&legacy=true`, 200],
        ['/api/v1/history/never.observer.test', 404],
        ['/api/v1/history/not%20valid', 400],
        [`/api/v1/icon/dynamic?address=${target}`, 200],
        [`/api/v1/icon/sharp?address=${target}`, 200],
        [`/api/v1/banner/${target}`, 200],
        ['/api/v1/banner/motd?motd=hello', 200],
        [`/api/v1/widget/normal/${target}`, 200],
        ['/api/v1/trends', 200],
        ['/api/v1/stats', 200],
        ['/api/v1/status', 200],
        // Prometheus probes.
        [`/probe?target=${target}`, 200],
        [`/api/v1/probe?target=${target}&edition=auto&query=true`, 200],
        ['/probe', 400],
        // The pages and everything they load from the service.
        ['/', 200],
        [`/server/${encodeURIComponent(target)}`, 200],
        [`/server/${encodeURIComponent(target)}?bedrock`, 200],
        [`/assets/${manifest.js}`, 200],
        [`/assets/${manifest.css}`, 200],
        ['/favicon.ico', 200],
        ['/api/v1/widget/fonts/inter-latin-400-normal.woff2', 200],
        ['/nowhere', 404],
      ];
      for (const [url, status] of get) {
        const res = await app.inject({ url, headers });
        expect(res.statusCode, url).toBe(status);
      }
      const bulk = await app.inject({
        method: 'POST',
        url: '/api/v1/status/bulk',
        headers,
        payload: { servers: [{ address: target }, { address: target, legacy: true }, { address: target, query: true }, { address: 'not valid' }] },
      });
      expect(bulk.statusCode).toBe(200);
      expect((bulk.json() as { results: unknown[] }).results).toHaveLength(4);
      expect((await app.inject({ url: `/api/v1/history/${target}`, headers })).json()).toMatchObject({ checks: expect.any(Number) });

      await status.recorded();
      await store.flush();
      // The look-up was counted (as a keyed hash) for the trend ranking.
      const trends = (await app.inject({ url: '/api/v1/trends' })).json();
      expect(trends.data[0]).toMatchObject({ hostname: '127.0.0.1', port: server.port });
      expect(trends.data[0].trend_score).toBeGreaterThanOrEqual(1);

      // Redis held this app's state (rate limits, cached statuses), never the client's address or agent.
      const contents = await redisContents(inspector);
      expect(contents.some(({ key }) => key.toString().startsWith('observer:rl:'))).toBe(true);
      for (const { key, values } of contents) {
        assertAbsent(`redis key ${key.toString()}`, key, [IP, UA]);
        for (const value of values) assertAbsent(`redis value of ${key.toString()}`, value, [IP, UA]);
      }
    } finally {
      inspector.disconnect();
      await app.close();
      await server.close();
      await new Promise<void>((resolve) => log.end(resolve));
    }
    const files = [db, `${db}-wal`, `${db}-shm`, logPath].filter((f) => existsSync(f));
    expect(files).toContain(logPath);
    const logText = readFileSync(logPath, 'utf8');
    // Every kind of route was logged, so the log had every chance to carry them.
    for (const route of ['/api/v1/history/:address', '/api/v1/status/bulk', '/api/v1/status/:address', '/server/:address', '/assets/:file']) {
      expect(logText, route).toContain(route);
    }
    for (const file of files) assertAbsent(file, readFileSync(file), [IP, UA, '203.0.113']);
  });
});
