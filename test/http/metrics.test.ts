/**
 * Prometheus metrics, end to end: the composed app (SQLite file, real Minecraft servers, real
 * Redis) scraped over GET /metrics with its bearer token, or over the loopback METRICS_PORT
 * listener, and read with a real exposition-format parser.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { register as globalRegistry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { createMetrics } from '../../src/metrics/index.js';
import { testConfig } from '../support/app.js';
import { freePort } from '../../scripts/ports.mjs';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { parseExposition, samples, value } from '../support/prometheus.js';
import { REDIS_URL } from '../support/services.js';

const TOKEN = 'metrics-test-token-5f0c2a9e';
const UA = 'MetricsProbe/3.2 (marker-71bd)';
const CLIENT_IP = '203.0.113.91';
const dir = mkdtempSync(join(tmpdir(), 'observer-metrics-'));
let java: RunningJavaServer;
let dbCount = 0;
const database = () => `sqlite:${join(dir, `observer-${(dbCount += 1)}.db`)}`;

beforeAll(async () => {
  java = await startJavaServer({ motd: 'metrics', onlinePlayers: 3 });
});
afterAll(async () => {
  await java.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /metrics', () => {
  it('is off by default: 404 in the one error shape, and nothing is collected', async () => {
    const { app, metrics, metricsServer } = await composeApp(testConfig({ DATABASE_URL: database() }), { logger: false, icmp: null });
    try {
      expect(metrics).toBeNull();
      expect(metricsServer).toBeNull();
      const res = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ status: 'error', error: 'not_found' });
    } finally {
      await app.close();
    }
  });

  it('with METRICS_TOKEN, answers 401 JSON without the right bearer token', async () => {
    const { app } = await composeApp(testConfig({ DATABASE_URL: database(), METRICS_TOKEN: TOKEN }), { logger: false, icmp: null });
    try {
      for (const authorization of [undefined, '', `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, 'Bearer']) {
        const res = await app.inject({ url: '/metrics', headers: authorization === undefined ? {} : { authorization } });
        expect(res.statusCode, String(authorization)).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
        expect(res.json()).toEqual({ status: 'error', error: 'unauthorized', message: expect.any(String) });
        expect(res.body).not.toContain('# HELP');
      }
      const openapi = (await app.inject({ url: '/api/v1/openapi.json' })).json() as { paths: Record<string, unknown> };
      expect(Object.keys(openapi.paths)).not.toContain('/metrics');
    } finally {
      await app.close();
    }
  });

  it('counts requests by route template, pings by edition and outcome, and cache results; never an address or client', async () => {
    const { app } = await composeApp(testConfig({ DATABASE_URL: database(), METRICS_TOKEN: TOKEN, TRUST_PROXY: 'true' }), {
      logger: false,
      icmp: null,
    });
    try {
      const offline = await freePort();
      const headers = { 'user-agent': UA, 'x-forwarded-for': CLIENT_IP };
      const lookups = [
        `/api/v1/status/127.0.0.1:${java.port}`, // MISS, online
        `/api/v1/status/127.0.0.1:${java.port}`, // HIT
        `/api/v1/status/mc.observer.test:${offline}`, // MISS, offline
        `/api/v1/status/127.0.0.1:${java.port}?legacy=true`, // MISS (legacy ping)
        `/api/v1/status/not%20an%20address`, // 400
        `/nowhere/secret-path-9d1`, // 404, no route
      ];
      for (const url of lookups) await app.inject({ url, headers });

      const res = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(res.headers['cache-control']).toBe('no-store');
      const m = parseExposition(res.body);

      const route = '/api/v1/status/:address';
      expect(value(m, 'observer_http_requests_total', { route, method: 'GET', status: '200' })).toBe(4);
      expect(value(m, 'observer_http_requests_total', { route, method: 'GET', status: '400' })).toBe(1);
      expect(value(m, 'observer_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
      expect(value(m, 'observer_http_request_duration_seconds_count', { route, method: 'GET', status: '200' })).toBe(4);
      expect(value(m, 'observer_http_request_duration_seconds_sum', { route, method: 'GET', status: '200' })).toBeGreaterThan(0);
      expect(value(m, 'observer_http_request_duration_seconds_bucket', { route, method: 'GET', status: '200', le: '+Inf' })).toBe(4);
      expect(m.types.get('observer_http_request_duration_seconds')).toBe('HISTOGRAM');

      expect(value(m, 'observer_pings_total', { edition: 'java', outcome: 'online' })).toBe(1);
      expect(value(m, 'observer_pings_total', { edition: 'java', outcome: 'offline' })).toBe(1);
      expect(value(m, 'observer_pings_total', { edition: 'legacy' })).toBe(1);
      expect(value(m, 'observer_ping_duration_seconds_count', { edition: 'java', outcome: 'online' })).toBe(1);
      expect(m.types.get('observer_ping_duration_seconds')).toBe('HISTOGRAM');

      expect(value(m, 'observer_status_cache_results_total', { result: 'HIT' })).toBe(1);
      expect(value(m, 'observer_status_cache_results_total', { result: 'MISS' })).toBe(3);
      expect(value(m, 'observer_status_cache_results_total', { result: 'STALE' })).toBe(0);

      expect(value(m, 'observer_pings_in_flight')).toBe(0);
      expect(value(m, 'observer_history_queue_depth')).toBeGreaterThanOrEqual(0);
      expect(value(m, 'observer_history_dropped_total')).toBe(0);
      expect(value(m, 'observer_dependency_state', { dependency: 'database', state: 'ok' })).toBe(1);
      expect(samples(m, 'observer_dependency_state', { dependency: 'redis' })).toEqual([]); // not configured
      expect(value(m, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
      expect(value(m, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(value(m, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);

      // Privacy and cardinality: no address, port, path, client IP or user agent in any label.
      for (const secret of ['127.0.0.1', 'mc.observer.test', String(java.port), 'secret-path', CLIENT_IP, 'MetricsProbe', 'not an address']) {
        expect(res.body.includes(`"${secret}`) || res.body.includes(`${secret}"`), secret).toBe(false);
      }
      for (const family of m.values()) {
        for (const sample of family.metrics) {
          for (const label of Object.values(sample.labels ?? {})) {
            expect(label).not.toMatch(/127\.0\.0\.1|observer\.test|203\.0\.113|Probe/);
          }
        }
      }
    } finally {
      await app.close();
    }
  });

  it('keeps answering (with its token) during maintenance, while the API answers 503', async () => {
    const { app } = await composeApp(testConfig({ DATABASE_URL: database(), METRICS_TOKEN: TOKEN, MAINTENANCE_MODE: 'true' }), {
      logger: false,
      icmp: null,
    });
    try {
      expect((await app.inject({ url: '/api/v1/stats' })).statusCode).toBe(503);
      expect((await app.inject({ url: '/metrics' })).statusCode).toBe(401);
      const res = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(200);
      expect(value(parseExposition(res.body), 'observer_http_requests_total', { route: '/api/v1/stats', status: '503' })).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('reports the Redis state when REDIS_URL is set', async () => {
    const { app } = await composeApp(testConfig({ DATABASE_URL: database(), METRICS_TOKEN: TOKEN, REDIS_URL }), { logger: false, icmp: null });
    try {
      await app.inject({ url: '/api/v1/status' });
      const res = await app.inject({ url: '/metrics', headers: { authorization: `bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(200);
      const m = parseExposition(res.body);
      expect(value(m, 'observer_dependency_state', { dependency: 'redis', state: 'ok' })).toBe(1);
      expect(value(m, 'observer_dependency_state', { dependency: 'redis', state: 'down' })).toBe(0);
    } finally {
      await app.close();
    }
  });
});

describe('METRICS_PORT', () => {
  it('serves /metrics on 127.0.0.1 only, without a token, while the main app keeps /metrics off', async () => {
    const { app, metricsServer } = await composeApp(testConfig({ DATABASE_URL: database(), METRICS_PORT: '0' }), { logger: false, icmp: null });
    try {
      expect(metricsServer).not.toBeNull();
      const { port, address } = metricsServer!;
      expect(address).toBe('127.0.0.1');
      await app.inject({ url: `/api/v1/status/127.0.0.1:${java.port}` });

      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      const m = parseExposition(await res.text());
      expect(value(m, 'observer_http_requests_total', { route: '/api/v1/status/:address', status: '200' })).toBe(1);
      expect(value(m, 'observer_pings_total', { edition: 'java', outcome: 'online' })).toBe(1);

      const other = await fetch(`http://127.0.0.1:${port}/`);
      expect(other.status).toBe(404);
      expect(await other.json()).toMatchObject({ status: 'error', error: 'not_found' });
      expect((await app.inject({ url: '/metrics' })).statusCode).toBe(404);

      // Not on the IPv6 loopback either: bound to 127.0.0.1 alone.
      const refused = await new Promise<string>((resolve) => {
        const socket = connect({ host: '::1', port }, () => {
          socket.destroy();
          resolve('connected');
        });
        socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      });
      expect(['ECONNREFUSED', 'EADDRNOTAVAIL', 'ENETUNREACH']).toContain(refused);
    } finally {
      await app.close();
    }
    // Closed with the app.
    await expect(fetch(`http://127.0.0.1:${metricsServer!.port}/metrics`)).rejects.toThrow();
  });
});

describe('createMetrics', () => {
  it('keeps to its own registry: prom-client\'s global registry stays empty, and two instances do not clash', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.observeCacheResult('HIT');
    expect(value(parseExposition(await a.scrape()), 'observer_status_cache_results_total', { result: 'HIT' })).toBe(1);
    expect(value(parseExposition(await b.scrape()), 'observer_status_cache_results_total', { result: 'HIT' })).toBe(0);
    expect(await globalRegistry.getMetricsAsJSON()).toEqual([]);
  });

  it('times the SQLite writer\'s group commits in a histogram', async () => {
    const { app, store } = await composeApp(testConfig({ DATABASE_URL: database(), METRICS_TOKEN: TOKEN }), { logger: false, icmp: null });
    try {
      const scrape = async () => parseExposition((await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })).body);
      for (const port of [java.port, await freePort()]) {
        expect((await app.inject({ url: `/api/v1/status/127.0.0.1:${port}` })).statusCode).toBe(200);
        await store.flush();
      }
      const m = await scrape();
      expect(m.types.get('observer_sqlite_writer_duration_seconds')).toBe('HISTOGRAM');
      const commits = value(m, 'observer_sqlite_writer_duration_seconds_count', { work: 'batch' });
      expect(commits).toBeGreaterThanOrEqual(2);
      expect(value(m, 'observer_sqlite_writer_duration_seconds_bucket', { work: 'batch', le: '+Inf' })).toBe(commits);
      expect(value(m, 'observer_sqlite_writer_duration_seconds_sum', { work: 'batch' })).toBeGreaterThan(0);
    } finally {
      await app.close();
    }
  });

  it('reads the history queue, its overflow and the dependency states at scrape time', async () => {
    let health = { state: 'ok' as 'ok' | 'degraded' | 'down', buffered: 0, dropped: 0 };
    const metrics = createMetrics({ history: () => health, redis: () => 'degraded', pingsInFlight: () => 7 });
    health = { state: 'down', buffered: 1234, dropped: 5 };
    let m = parseExposition(await metrics.scrape());
    expect(value(m, 'observer_history_queue_depth')).toBe(1234);
    expect(value(m, 'observer_history_dropped_total')).toBe(5);
    expect(value(m, 'observer_pings_in_flight')).toBe(7);
    expect(value(m, 'observer_dependency_state', { dependency: 'database', state: 'down' })).toBe(1);
    expect(value(m, 'observer_dependency_state', { dependency: 'database', state: 'ok' })).toBe(0);
    expect(value(m, 'observer_dependency_state', { dependency: 'redis', state: 'degraded' })).toBe(1);
    health = { state: 'ok', buffered: 0, dropped: 9 };
    m = parseExposition(await metrics.scrape());
    expect(value(m, 'observer_history_dropped_total')).toBe(9);
    expect(value(m, 'observer_dependency_state', { dependency: 'database', state: 'ok' })).toBe(1);
  });

  it('reports the heap kept after the last full collection: memory held counts, garbage waiting for a collection does not', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const MiB = 1024 * 1024;
    const metrics = createMetrics();
    const live = async () => value(parseExposition(await metrics.scrape()), 'observer_heap_live_bytes');
    // V8 reports a collection a moment after it: poll for up to two seconds.
    const settled = async (wanted: (bytes: number) => boolean): Promise<number> => {
      let bytes = await live();
      for (let i = 0; i < 200 && !wanted(bytes); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        bytes = await live();
      }
      return bytes;
    };

    gc();
    const before = await settled((bytes) => bytes > 0);
    expect(before).toBeGreaterThan(0);
    let kept: string[] | null = Array.from({ length: 200_000 }, (_, i) => `kept-${i}-${'x'.repeat(80)}`);
    gc();
    const holding = await settled((bytes) => bytes > before + 16 * MiB);
    expect(holding - before).toBeGreaterThan(16 * MiB);
    expect(kept).toHaveLength(200_000);

    kept = null;
    // Garbage, 30 MiB and more: heap used grows with it, the gauge does not (a collection V8
    // starts meanwhile would only lower it, now that `kept` is gone).
    let made = 0;
    for (let i = 0; i < 400_000; i++) made += { i, text: `garbage-${i}-${'y'.repeat(80)}` }.text.length;
    expect(made).toBeGreaterThan(30 * MiB);
    expect(await live()).toBeLessThanOrEqual(holding);

    gc();
    const released = await settled((bytes) => bytes < holding - 16 * MiB);
    expect(holding - released).toBeGreaterThan(16 * MiB);
  });

  it('bounds label values: unknown methods and editions are folded', async () => {
    const metrics = createMetrics();
    metrics.observeRequest(null, 'PROPFIND', 405, 0.001);
    metrics.observePing('pocket-edition', true, 0.01);
    const m = parseExposition(await metrics.scrape());
    expect(value(m, 'observer_http_requests_total', { route: 'unmatched', method: 'OTHER', status: '405' })).toBe(1);
    expect(value(m, 'observer_pings_total', { edition: 'other', outcome: 'online' })).toBe(1);
  });
});
