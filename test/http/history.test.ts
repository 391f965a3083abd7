/**
 * /trends and /stats through the real app (buildApp + app.inject) on a real SQLite store.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ClientHasher } from '../../src/core/client-hash.js';
import type { Clock } from '../../src/core/clock.js';
import { buildApp } from '../../src/http/app.js';
import { openStore, type HistoryStore } from '../../src/store/index.js';
import type { CheckRecord } from '../../src/store/types.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-history-http-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.parse('2025-06-01T12:00:00.000Z');
const clock: Clock = { now: () => T0 };
const stores: HistoryStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function setup(env: Record<string, string> = {}) {
  const path = join(dir, `${randomUUID()}.db`);
  const config = loadConfig({ DATABASE_URL: `sqlite:${path}`, ...env });
  const store = await openStore(config, clock);
  stores.push(store);
  const app = await buildApp({ config, store, clock, logger: false });
  await app.ready();
  return { app, store, path };
}

function check(fields: Partial<CheckRecord> = {}): CheckRecord {
  return {
    serverId: randomUUID(),
    edition: 'java',
    host: 'mc.example.com',
    port: 25565,
    checkedAt: T0 - 60_000,
    online: true,
    playersOnline: 10,
    playersMax: 100,
    latencyMs: 25,
    ...fields,
  };
}

/** Queues checks and waits for their group commit. */
async function record(store: HistoryStore, ...checks: CheckRecord[]): Promise<void> {
  for (const c of checks) store.recordCheck(c);
  await store.flush();
}

const errorShape = { status: 'error', error: expect.any(String), message: expect.any(String) };

describe('GET /api/v1/trends', () => {
  it('pages through online servers with cursors', async () => {
    const { app, store } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const c = check({ host: `s${i}.example.com`, port: 25565 + i, playersOnline: 100 - i });
      ids.push(c.serverId);
      await record(store, c);
    }
    await record(store, check({ online: false, playersOnline: null }));

    const first = await app.inject('/api/v1/trends?limit=2');
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toContain('application/json');
    const body = first.json();
    expect(body).toEqual({
      success: true,
      data: [
        {
          server_id: ids[0],
          hostname: 's0.example.com',
          address: 's0.example.com',
          port: 25565,
          edition: 'java',
          trend_score: 0.090909,
          is_online: true,
          stale: false,
          checked_at: '2025-06-01T11:59:00.000Z',
          players_online: 100,
          players_max: 100,
          record_players: 100,
          uptime_percentage: 100,
        },
        expect.objectContaining({ server_id: ids[1], address: 's1.example.com:25566' }),
      ],
      meta: { nextCursor: ids[1], hasNext: true, limit: 2 },
    });

    const second = await app.inject(`/api/v1/trends?limit=2&cursor=${body.meta.nextCursor}`);
    expect(second.json()).toMatchObject({
      success: true,
      data: [{ server_id: ids[2] }],
      meta: { nextCursor: null, hasNext: false, limit: 2 },
    });
    // Upper case and the urn: form are the same UUID.
    const urn = await app.inject(`/api/v1/trends?limit=2&cursor=urn:uuid:${ids[1]!.toUpperCase()}`);
    expect(urn.json().data).toEqual(second.json().data);
  });

  it('defaults to 10 per page, and answers an empty list when nothing is online', async () => {
    const { app } = await setup();
    const res = await app.inject('/api/v1/trends');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, data: [], meta: { nextCursor: null, hasNext: false, limit: 10 } });
    expect(res.headers['cache-control']).toBe('public, max-age=30');
  });

  it.each(['0', '51', 'abc', '1.5', '-1'])('answers 400 for limit=%s', async (limit) => {
    const { app } = await setup();
    const res = await app.inject(`/api/v1/trends?limit=${limit}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ ...errorShape, error: 'invalid_parameter' });
    expect(res.json().message).toContain('limit');
  });

  it.each(['not-a-uuid', '123', '00000000-0000-0000-0000-00000000000g', ''])('answers 400 for cursor=%s', async (cursor) => {
    const { app } = await setup();
    const res = await app.inject(`/api/v1/trends?cursor=${cursor}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ ...errorShape, error: 'invalid_parameter' });
    expect(res.json().message).toContain('cursor');
  });

  it('answers 400 invalid_cursor for a UUID naming no known server', async () => {
    const { app, store } = await setup();
    await record(store, check());
    const res = await app.inject(`/api/v1/trends?cursor=${randomUUID()}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ ...errorShape, error: 'invalid_cursor' });
  });

  it('is rate-limited on the general tier', async () => {
    const { app } = await setup({ RATE_LIMIT_GENERAL: '2' });
    for (let i = 0; i < 2; i++) expect((await app.inject('/api/v1/trends')).statusCode).toBe(200);
    const limited = await app.inject('/api/v1/trends');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ ...errorShape, error: 'rate_limited' });
    expect(limited.headers['retry-after']).toBeDefined();
  });
});

describe('GET /api/v1/stats', () => {
  it('answers the statistics with Cache-Control: public, max-age=60', async () => {
    const { app, store } = await setup();
    await record(store, check({ host: 'a.example.com', playersOnline: 7 }));
    await record(store, check({ host: 'b.example.com', online: false, playersOnline: null, checkedAt: T0 }));
    store.count({ serverQueries: 2, totalChecks: 2 });
    await app.inject('/api/v1/trends');
    await app.inject('/api/v1/status');
    await app.inject('/nowhere');

    const res = await app.inject('/api/v1/stats');
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.json()).toEqual({
      totalRequests: 3,
      apiRequests: 1, // the health check and the unknown path outside /api/v1 do not count
      serverQueries: 2,
      totalChecks: 2,
      onlineServers: 1,
      offlineServers: 1,
      activePlayers: 7,
      onlineRate: 50,
      recentChecks: [
        { hostname: 'b.example.com', port: 25565, edition: 'java', online: false, players: null, checked_at: '2025-06-01T12:00:00.000Z' },
        { hostname: 'a.example.com', port: 25565, edition: 'java', online: true, players: 7, checked_at: '2025-06-01T11:59:00.000Z' },
      ],
    });
    // Cached for 60 s (the clock stands still): the /stats request itself is not in it yet.
    expect((await app.inject('/api/v1/stats')).json().totalRequests).toBe(3);
  });
});

describe('OpenAPI', () => {
  it('documents both routes with their schemas, the score formula and the error responses', async () => {
    const { app } = await setup();
    const doc = (await app.inject('/api/v1/openapi.json')).json();
    const trends = doc.paths['/trends'].get;
    const stats = doc.paths['/stats'].get;
    expect(trends.description).toContain('distinct_clients_24h + players_online / (players_online + 1000)');
    expect(trends.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['cursor', 'limit']);
    for (const [op, statuses] of [[trends, ['400', '429', '503']], [stats, ['429', '503']]] as const) {
      for (const status of statuses) {
        expect(JSON.stringify(op.responses[status])).toContain('ErrorResponse');
      }
    }
    // Every field of a trend item is always sent, so every one is required.
    const trendItem = trends.responses['200'].content['application/json'].schema.properties.data.items;
    expect([...trendItem.required].sort()).toEqual(Object.keys(trendItem.properties).sort());
    expect(Object.keys(stats.responses['200'].content['application/json'].schema.properties)).toContain('recentChecks');
  });
});

describe('privacy', () => {
  const IP = '203.0.113.77';
  const UA = 'PrivacyProbe/9.9 (observer-test; marker-5d1f0c)';

  function assertAbsent(label: string, bytes: Buffer) {
    for (const secret of [IP, UA]) {
      for (const encoding of ['utf8', 'utf16le'] as const) {
        expect(bytes.includes(Buffer.from(secret, encoding)), `${secret} (${encoding}) in ${label}`).toBe(false);
      }
    }
  }

  it('writes neither the client IP nor its user agent to the database or the log', async () => {
    const path = join(dir, `privacy-${randomUUID()}.db`);
    const logPath = join(dir, `privacy-${randomUUID()}.log`);
    const config = loadConfig({ DATABASE_URL: `sqlite:${path}`, TRUST_PROXY: 'true', LOG_LEVEL: 'trace', LOG_REQUESTS: 'true' });
    const store = await openStore(config, clock);
    stores.push(store);
    const log = createWriteStream(logPath);
    const hasher = new ClientHasher(clock);
    const app = await buildApp({ config, store, clock, hasher, logger: { level: 'trace', stream: log } });
    await app.ready();

    const headers = { 'x-forwarded-for': IP, 'user-agent': UA };
    const paths = [
      '/api/v1/trends',
      '/api/v1/trends?limit=0',
      `/api/v1/trends?cursor=${randomUUID()}`,
      '/api/v1/stats',
      '/api/v1/status',
      '/api/v1/openapi.json',
      '/api/v1/nowhere',
    ];
    // What the status service does for a look-up: a check, and the client's keyed hash.
    const server = check({ checkedAt: T0 });
    await record(store, server);
    store.recordLookup(server.serverId, hasher.hash(IP));
    for (const url of paths) {
      const res = await app.inject({ url, headers });
      expect(res.statusCode).toBeLessThan(500);
    }
    await store.flush();
    expect((await app.inject({ url: '/api/v1/trends', headers })).json().data[0].trend_score).toBe(1.009900);

    const files = [path, `${path}-wal`, `${path}-shm`].filter((f) => existsSync(f));
    expect(files.length).toBeGreaterThan(1);
    for (const file of files) assertAbsent(file, readFileSync(file));

    await app.close();
    await store.close();
    await new Promise<void>((resolve) => log.end(resolve));
    const logged = readFileSync(logPath);
    expect(logged.toString()).toContain('request completed');
    assertAbsent('the log', logged);
    assertAbsent('the closed database', readFileSync(path));
  });
});
