/**
 * GET /api/v1/history/{address} through the real app (buildApp + app.inject) on a real store:
 * SQLite in a temp file and PostgreSQL in a database of its own. Checks are written with the
 * store's own recordCheck at chosen times (fake clock) to pin the bucket edges and ranges;
 * every 200 body is checked against the OpenAPI document.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import type { Clock } from '../../src/core/clock.js';
import { buildApp } from '../../src/http/app.js';
import { serverId } from '../../src/status/server-id.js';
import { openStore, type HistoryStore } from '../../src/store/index.js';
import type { CheckRecord } from '../../src/store/types.js';
import { openApiValidator } from '../support/openapi.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** 12:34:56.789 UTC: inside a 10-minute bucket that starts at 12:30, a 1-hour one at 12:00, a 4-hour one at 12:00. */
const NOW = Date.parse('2025-06-01T12:34:56.789Z');
const BUCKET_24H = Date.parse('2025-06-01T12:30:00.000Z');

class FakeClock implements Clock {
  constructor(public t = NOW) {}
  now(): number {
    return this.t;
  }
}

interface Backend {
  name: string;
  databaseUrl(): Promise<string>;
  /** Takes the database away under a running store (PostgreSQL: dropped with its connections). */
  outage?(url: string): Promise<void>;
  dispose(): Promise<void>;
}

const sqliteDir = mkdtempSync(join(tmpdir(), 'observer-uptime-'));
const pgDatabases: TestDatabase[] = [];

const BACKENDS: Backend[] = [
  {
    name: 'SQLite',
    async databaseUrl() {
      return `sqlite:${join(sqliteDir, `${randomBytes(6).toString('hex')}.db`)}`;
    },
    async dispose() {
      rmSync(sqliteDir, { recursive: true, force: true });
    },
  },
  {
    name: 'PostgreSQL',
    async databaseUrl() {
      const database = await createTestDatabase('observer_uptime');
      pgDatabases.push(database);
      return database.url;
    },
    async outage(url) {
      await pgDatabases.find((database) => database.url === url)!.drop();
    },
    async dispose() {
      for (const database of pgDatabases.splice(0)) await database.drop();
    },
  },
];

const HOST = 'mc.example.com';
const JAVA_ID = serverId('java', HOST, 25565);

function check(checkedAt: number, fields: Partial<CheckRecord> = {}): CheckRecord {
  return {
    serverId: JAVA_ID,
    edition: 'java',
    host: HOST,
    port: 25565,
    checkedAt,
    online: true,
    playersOnline: 10,
    playersMax: 100,
    latencyMs: 20,
    ...fields,
  };
}

interface Bucket {
  time: string;
  checks: number;
  online: number;
  players_avg: number | null;
  players_max: number | null;
}
interface Body {
  server_id: string;
  range: string;
  bucket_seconds: number;
  from: string;
  to: string;
  checks: number;
  online_checks: number;
  uptime_percentage: number | null;
  buckets: Bucket[];
}

for (const backend of BACKENDS) {
  describe(`GET /api/v1/history/{address} on ${backend.name}`, () => {
    const stores: HistoryStore[] = [];
    let validate: Awaited<ReturnType<typeof openApiValidator>>;

    afterEach(async () => {
      await Promise.all(stores.splice(0).map((s) => s.close()));
    });
    afterAll(() => backend.dispose());

    async function setup(checks: CheckRecord[], clock = new FakeClock()) {
      const url = await backend.databaseUrl();
      const config = loadConfig({ DATABASE_URL: url });
      const store = await openStore(config, clock);
      stores.push(store);
      for (const c of checks) await store.recordCheck(c);
      await store.flush();
      const app = await buildApp({ config, store, clock, logger: false });
      await app.ready();
      validate ??= await openApiValidator(app);
      const get = async (url: string) => {
        const response = await app.inject({ method: 'GET', url });
        return { response, body: response.json() as Body & Record<string, unknown> };
      };
      return { app, store, get, url };
    }


    it('answers 404 not_found for a server never checked', async () => {
      const { get } = await setup([check(NOW - MINUTE)]);
      const { response, body } = await get('/api/v1/history/other.example.com');
      expect(response.statusCode).toBe(404);
      expect(body).toEqual({ status: 'error', error: 'not_found', message: expect.any(String) });
      // Same host, another port or edition: other servers, never checked either.
      expect((await get(`/api/v1/history/${HOST}:25566`)).response.statusCode).toBe(404);
      expect((await get(`/api/v1/history/${HOST}?bedrock=true`)).response.statusCode).toBe(404);
    });

    it('counts a check still queued for the group commit: a server looked up a moment ago is no 404', async () => {
      // A window far longer than the test: without the history read writing the queued check
      // first, the server would be unknown to the database here.
      const url = await backend.databaseUrl();
      const config = loadConfig({ DATABASE_URL: url });
      const store = await openStore(config, new FakeClock(), { writes: { windowMs: 10 * MINUTE } });
      stores.push(store);
      const app = await buildApp({ config, store, clock: new FakeClock(), logger: false });
      await app.ready();
      validate ??= await openApiValidator(app);
      store.recordCheck(check(NOW - 1000, { playersOnline: 7 }));
      expect(store.health().buffered).toBe(1);
      const response = await app.inject({ method: 'GET', url: `/api/v1/history/${HOST}` });
      expect(response.statusCode).toBe(200);
      const body = response.json() as Body;
      expect(validate('ServerHistory', body)).toEqual([]);
      expect(body).toMatchObject({ checks: 1, online_checks: 1, uptime_percentage: 100 });
      expect(body.buckets.at(-1)).toMatchObject({ checks: 1, players_max: 7 });
      expect(store.health().buffered).toBe(0);
      // Another server's queued check is left to its window: a history read is not a flush.
      store.recordCheck(check(NOW - 500, { serverId: serverId('java', 'other.example.com', 25565), host: 'other.example.com' }));
      expect((await app.inject({ method: 'GET', url: `/api/v1/history/${HOST}?range=7d` })).statusCode).toBe(200);
      expect(store.health().buffered).toBe(1);
    });

    it('refuses invalid addresses, ranges and mode combinations with 400s', async () => {
      const { get } = await setup([check(NOW - MINUTE)]);
      for (const url of [
        '/api/v1/history/bad%20host',
        `/api/v1/history/${HOST}?range=1y`,
        `/api/v1/history/${HOST}?legacy=true&bedrock=true`,
        `/api/v1/history/${HOST}:70000`,
      ]) {
        const { response, body } = await get(url);
        expect(response.statusCode, url).toBe(400);
        expect(body).toMatchObject({ status: 'error', error: expect.any(String), message: expect.any(String) });
      }
    });

    it('buckets 24 hours in 144 ten-minute buckets with edges on the clock', async () => {
      const { get } = await setup([
        // Exactly on the current bucket's start: in the current (last) bucket.
        check(BUCKET_24H, { playersOnline: 4 }),
        // Now: in the last bucket too.
        check(NOW, { playersOnline: 8 }),
        // One millisecond before the current bucket: the one before it.
        check(BUCKET_24H - 1, { online: false, playersOnline: null, playersMax: null }),
        // The first bucket's start is included, a millisecond earlier is not.
        check(BUCKET_24H - 143 * 10 * MINUTE, { playersOnline: 1 }),
        check(BUCKET_24H - 143 * 10 * MINUTE - 1, { playersOnline: 99 }),
        // After the last bucket (a clock ahead of ours): not in the range.
        check(BUCKET_24H + 10 * MINUTE, { playersOnline: 77 }),
      ]);
      const { response, body } = await get(`/api/v1/history/${HOST}`);
      expect(response.statusCode).toBe(200);
      expect(response.headers['cache-control']).toBe('public, max-age=60');
      expect(validate('ServerHistory', body)).toEqual([]);
      expect(body).toMatchObject({
        server_id: JAVA_ID,
        hostname: HOST,
        port: 25565,
        edition: 'java',
        range: '24h',
        bucket_seconds: 600,
        from: new Date(BUCKET_24H - 143 * 10 * MINUTE).toISOString(),
        to: new Date(BUCKET_24H + 10 * MINUTE).toISOString(),
        checks: 4,
        online_checks: 3,
        uptime_percentage: 75,
      });
      expect(body.buckets).toHaveLength(144);
      expect(body.buckets[143]).toEqual({ time: new Date(BUCKET_24H).toISOString(), checks: 2, online: 2, players_avg: 6, players_max: 8 });
      expect(body.buckets[142]).toEqual({
        time: new Date(BUCKET_24H - 10 * MINUTE).toISOString(),
        checks: 1,
        online: 0,
        players_avg: null,
        players_max: null,
      });
      expect(body.buckets[0]).toMatchObject({ checks: 1, online: 1, players_avg: 1, players_max: 1 });
      expect(body.buckets.slice(1, 142).every((b) => b.checks === 0 && b.players_avg === null)).toBe(true);
      // Buckets are contiguous, oldest first.
      for (let i = 1; i < body.buckets.length; i++) {
        expect(Date.parse(body.buckets[i]!.time) - Date.parse(body.buckets[i - 1]!.time)).toBe(10 * MINUTE);
      }
    });

    it('7 days: 168 hourly buckets; 30 days: 180 four-hour buckets, with their own edges', async () => {
      const hourStart = Date.parse('2025-06-01T12:00:00.000Z');
      const { get } = await setup([
        check(NOW - 2 * DAY),
        check(NOW - 6 * DAY, { online: false, playersOnline: null, playersMax: null }),
        // Before the 7-day range (its first bucket starts 167 hours before 12:00).
        check(hourStart - 167 * HOUR - 1),
        // Inside 30 days, outside 7.
        check(NOW - 20 * DAY, { playersOnline: 50 }),
        // Before the 30-day range.
        check(hourStart - 179 * 4 * HOUR - 1, { playersOnline: 1000 }),
      ]);
      const week = (await get(`/api/v1/history/${HOST}?range=7d`)).body;
      expect(validate('ServerHistory', week)).toEqual([]);
      expect(week).toMatchObject({ range: '7d', bucket_seconds: 3600, checks: 2, online_checks: 1, uptime_percentage: 50 });
      expect(week.buckets).toHaveLength(168);
      expect(week.from).toBe(new Date(hourStart - 167 * HOUR).toISOString());

      const month = (await get(`/api/v1/history/${HOST}?range=30d`)).body;
      expect(validate('ServerHistory', month)).toEqual([]);
      expect(month).toMatchObject({ range: '30d', bucket_seconds: 14_400, checks: 4, online_checks: 3, uptime_percentage: 75 });
      expect(month.buckets).toHaveLength(180);
      expect(month.from).toBe(new Date(hourStart - 179 * 4 * HOUR).toISOString());
      expect(Math.max(...month.buckets.map((b) => b.players_max ?? 0))).toBe(50);
      for (const body of [week, month]) expect(body.buckets.length).toBeLessThanOrEqual(200);
    });

    it('averages players over online checks, rounds to 2 decimals, and counts offline checks in the uptime', async () => {
      const { get } = await setup([
        check(BUCKET_24H + 1000, { playersOnline: 1 }),
        check(BUCKET_24H + 2000, { playersOnline: 2 }),
        check(BUCKET_24H + 3000, { playersOnline: 2 }),
        check(BUCKET_24H + 4000, { online: false, playersOnline: null, playersMax: null }),
      ]);
      const { body } = await get(`/api/v1/history/${HOST}`);
      expect(body.buckets.at(-1)).toMatchObject({ checks: 4, online: 3, players_avg: 1.67, players_max: 2 });
      expect(body.uptime_percentage).toBe(75);
    });

    it('30 days: a bucket sums the checks of its four hours, written in separate commits', async () => {
      const bucket = Math.floor((NOW - 3 * DAY) / (4 * HOUR)) * 4 * HOUR;
      const { get, store } = await setup([
        check(bucket + 5_000, { playersOnline: 4 }),
        check(bucket + HOUR + 5_000, { online: false, playersOnline: null, playersMax: null }),
      ]);
      // A later commit adds to the same four hours, as the group commit does every few milliseconds.
      for (const c of [check(bucket + 3 * HOUR + 5_000, { playersOnline: 9 }), check(bucket + 3 * HOUR + 6_000, { playersOnline: 2, playersMax: null })]) {
        await store.recordCheck(c);
      }
      await store.flush();
      const { body } = await get(`/api/v1/history/${HOST}?range=30d`);
      const found = body.buckets.find((b) => b.time === new Date(bucket).toISOString());
      expect(found).toEqual({ time: new Date(bucket).toISOString(), checks: 4, online: 3, players_avg: 5, players_max: 9 });
      expect(body).toMatchObject({ checks: 4, online_checks: 3, uptime_percentage: 75 });
    });

    it('a server whose checks are all older than the range: 200 with no checks and a null uptime', async () => {
      const { get } = await setup([check(NOW - 2 * DAY)]);
      const { response, body } = await get(`/api/v1/history/${HOST}`);
      expect(response.statusCode).toBe(200);
      expect(validate('ServerHistory', body)).toEqual([]);
      expect(body).toMatchObject({ checks: 0, online_checks: 0, uptime_percentage: null });
    });

    it('names servers like /status: default ports, legacy shares Java, Bedrock is its own; no client data in the body', async () => {
      const bedrockId = serverId('bedrock', HOST, 19132);
      const { get } = await setup([
        check(NOW - MINUTE),
        check(NOW - MINUTE, { serverId: bedrockId, edition: 'bedrock', port: 19132, online: false, playersOnline: null, playersMax: null }),
      ]);
      const java = (await get(`/api/v1/history/${HOST.toUpperCase()}:25565`)).body;
      const legacy = (await get(`/api/v1/history/${HOST}?legacy=true`)).body;
      const bedrock = (await get(`/api/v1/history/${HOST}?bedrock=true`)).body;
      expect(java.server_id).toBe(JAVA_ID);
      expect(legacy.server_id).toBe(JAVA_ID);
      expect(bedrock).toMatchObject({ server_id: bedrockId, edition: 'bedrock', port: 19132, uptime_percentage: 0 });
      expect(Object.keys(java).sort()).toEqual(
        ['bucket_seconds', 'buckets', 'checks', 'edition', 'from', 'hostname', 'online_checks', 'port', 'range', 'server_id', 'to', 'uptime_percentage'].sort(),
      );
    });

    it.runIf(backend.outage)('while the database is gone: the last good answer marked stale, or 503 store_unavailable', async () => {
      const { get, url } = await setup([check(NOW - MINUTE)]);
      const before = await get(`/api/v1/history/${HOST}`);
      expect(before.response.statusCode).toBe(200);
      expect(before.body.stale).toBeUndefined();
      await backend.outage!(url);
      const stale = await get(`/api/v1/history/${HOST}`);
      expect(stale.response.statusCode).toBe(200);
      expect(stale.response.headers['x-cache']).toBe('STALE');
      expect(validate('ServerHistory', stale.body)).toEqual([]);
      expect(stale.body).toEqual({ ...before.body, stale: true });
      const none = await get(`/api/v1/history/${HOST}?range=7d`);
      expect(none.response.statusCode).toBe(503);
      expect(none.response.headers['retry-after']).toBeDefined();
      expect(none.body).toMatchObject({ status: 'error', error: 'store_unavailable' });
    });
  });
}
