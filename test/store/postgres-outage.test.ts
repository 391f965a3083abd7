/**
 * PostgreSQL as a catch-up store (docs/operations.md), end to end: the whole app on a private
 * PostgreSQL started here (initdb into a temp dir, a free loopback port; the shared one from
 * scripts/services.sh is never touched), a real Minecraft server, dnsmasq names. PostgreSQL
 * is stopped with `pg_ctl stop -m immediate` twice in a row while status requests go on:
 *  - status keeps answering (online, 200);
 *  - /trends and /stats answer their last good answer marked stale, or 503
 *    `store_unavailable` with Retry-After when there is none; never a 500;
 *  - health reports the database down and the buffer length;
 *  - once PostgreSQL is back, every check made during the outage is in the history.
 * And a bound too small for an outage: the overflow is dropped, counted and reported, the
 * rest written in order.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { openStore } from '../../src/store/index.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';

let postgres: PrivatePostgres;
const startPg = () => postgres.start();
const stopPg = () => postgres.stop();

let server: RunningJavaServer;
beforeAll(async () => {
  postgres = await startPrivatePostgres();
  server = await startJavaServer({ motd: 'outage', onlinePlayers: 3 });
}, 120_000);

afterAll(async () => {
  await server?.close();
  postgres?.remove();
});

it('keeps answering through two immediate PostgreSQL stops, and writes every outage check when it returns', async () => {
  const url = postgres.url;
  const { app, store, status: service } = await composeApp(
    testConfig({ DATABASE_URL: url, RATE_LIMIT_STATUS: '100000', RATE_LIMIT_GENERAL: '100000', TARGET_PINGS_PER_MINUTE: '100000' }),
    { logger: false, icmp: null },
  );
  const reader = () => new pg.Client({ connectionString: url });
  const status = async (name: string) => {
    const res = await app.inject(`/api/v1/status/${name}.any.observer.test:${server.port}`);
    expect(res.statusCode, name).toBe(200);
    expect(res.json().online, name).toBe(true);
  };
  try {
    await status('before-outage');
    await service.recorded();
    await store.flush();
    // A server never checked: a 404 now, and never a 404 from the fallback during the outage.
    const neverChecked = `/api/v1/history/never-checked.any.observer.test:${server.port}`;
    expect((await app.inject(neverChecked)).statusCode).toBe(404);
    const trends = await app.inject('/api/v1/trends?limit=5');
    expect(trends.statusCode).toBe(200);
    expect(trends.json().stale).toBeUndefined();
    expect(trends.json().data.map((s: { hostname: string }) => s.hostname)).toEqual(['before-outage.any.observer.test']);

    const outageNames: string[] = [];
    for (const round of [1, 2]) {
      stopPg();
      for (let i = 0; i < 15; i++) {
        const name = `outage${round}-${i}`;
        outageNames.push(`${name}.any.observer.test`);
        await status(name);
      }
      await service.recorded();
      await vi.waitFor(() => expect(store.health().state).toBe('down'), { timeout: 20_000, interval: 100 });
      expect(store.health().buffered).toBeGreaterThanOrEqual(15);

      // The page answered before: its last good answer, marked stale.
      let started = performance.now();
      const stale = await app.inject('/api/v1/trends?limit=5');
      const staleMs = performance.now() - started;
      expect(stale.statusCode).toBe(200);
      expect(stale.headers['x-cache']).toBe('STALE');
      expect(stale.json()).toMatchObject({ success: true, stale: true });
      expect(stale.json().data.map((s: { hostname: string }) => s.hostname)).toEqual(['before-outage.any.observer.test']);
      // A page never answered: 503 with Retry-After, never a 500.
      started = performance.now();
      const none = await app.inject(`/api/v1/trends?limit=${round + 10}`);
      const noneMs = performance.now() - started;
      expect(none.statusCode).toBe(503);
      expect(none.headers['retry-after']).toBeDefined();
      expect(none.json()).toMatchObject({ status: 'error', error: 'store_unavailable' });
      const stats = await app.inject('/api/v1/stats');
      expect([200, 503]).toContain(stats.statusCode);
      // It may have been checked since the database last answered: 503, not the old 404.
      const unknown = await app.inject(neverChecked);
      expect(unknown.statusCode).toBe(503);
      expect(unknown.json()).toMatchObject({ status: 'error', error: 'store_unavailable' });
      console.log(`outage ${round}: stale /trends in ${staleMs.toFixed(0)} ms, 503 in ${noneMs.toFixed(0)} ms`);

      startPg();
      await vi.waitFor(() => expect(store.health()).toMatchObject({ state: 'ok', buffered: 0 }), {
        timeout: 30_000,
        interval: 100,
      });
    }

    const client = reader();
    await client.connect();
    try {
      const { rows } = await client.query<{ host: string }>(
        'SELECT s.host FROM checks c JOIN servers s ON s.sid = c.server ORDER BY c.checked_at, s.sid',
      );
      const hosts = rows.map((r) => r.host);
      // Every check made during the two outages, once each, in the order they were made.
      expect(hosts).toEqual(['before-outage.any.observer.test', ...outageNames]);
      const counters = await client.query<{ value: string }>("SELECT value FROM counters WHERE name = 'totalChecks'");
      expect(Number(counters.rows[0]?.value)).toBe(31);
    } finally {
      await client.end();
    }
    expect(store.health().dropped).toBe(0);
    // Fresh again.
    await vi.waitFor(
      async () => {
        const fresh = await app.inject('/api/v1/trends?limit=50');
        expect(fresh.statusCode).toBe(200);
        expect(fresh.json().stale).toBeUndefined();
        expect(fresh.json().data).toHaveLength(31);
      },
      { timeout: 10_000, interval: 250 },
    );
  } finally {
    await app.close();
  }
}, 240_000);

it('counts what overflows its bound during an outage, and writes the rest in order when PostgreSQL returns', async () => {
  const url = postgres.url;
  const errors: unknown[] = [];
  const store = await openStore({ database: { kind: 'postgres', url }, checkRetentionDays: 30 }, undefined, {
    onError: (error) => errors.push(error),
    writes: { maxRows: 40, retryMinMs: 50, retryMaxMs: 200 },
  });
  try {
    stopPg();
    const t0 = Date.now();
    for (let i = 0; i < 100; i++) {
      store.recordCheck({
        serverId: `00000000-0000-5000-8000-${String(i).padStart(12, '0')}`,
        edition: 'java',
        host: `overflow-${i}.example.com`,
        port: 25565,
        checkedAt: t0 + i,
        online: true,
        playersOnline: i,
        playersMax: 100,
        latencyMs: 1,
      });
    }
    expect(store.health()).toMatchObject({ buffered: 40, dropped: 60 });
    expect(errors.some((e) => e instanceof Error && /buffer full: 1 rows dropped/.test(e.message))).toBe(true);
    await vi.waitFor(() => expect(store.health().state).toBe('down'), { timeout: 20_000, interval: 100 });

    startPg();
    await vi.waitFor(() => expect(store.health()).toMatchObject({ buffered: 0, dropped: 60 }), { timeout: 30_000, interval: 100 });
    const after = new pg.Client({ connectionString: url });
    await after.connect();
    try {
      const { rows } = await after.query<{ host: string }>(
        "SELECT s.host FROM checks c JOIN servers s ON s.sid = c.server WHERE s.host LIKE 'overflow-%' ORDER BY c.checked_at",
      );
      expect(rows.map((r) => r.host)).toEqual(Array.from({ length: 40 }, (_, i) => `overflow-${i}.example.com`));
    } finally {
      await after.end();
    }
  } finally {
    await store.close();
  }
}, 120_000);
