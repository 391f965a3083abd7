/**
 * The fast status path (src/http/fast-status.ts) over a real socket, against the whole app as
 * main.ts composes it: a repeat of a plain status request is answered without Fastify, and must
 * be indistinguishable from the route's own answer (body, headers, rate limit, 429, stale,
 * /stats, metrics). app.inject() never reaches it, so every request here is real HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { parseExposition, value } from '../support/prometheus.js';

let java: RunningJavaServer;
const dirs: string[] = [];
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  java = await startJavaServer({ motd: '§aFast', onlinePlayers: 2, maxPlayers: 10 });
});
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});
afterAll(async () => {
  await java.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string> = {}, clock?: FakeClock) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-fast-'));
  dirs.push(dir);
  const config = testConfig({ DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`, LOG_LEVEL: 'silent', ...env });
  const composed = await composeApp(config, { icmp: null, logger: false, ...(clock ? { clock } : {}) });
  // How many requests reach Fastify at all (the fast path's answers never do).
  const routed: string[] = [];
  composed.app.addHook('onRequest', async (request) => {
    routed.push(request.url);
  });
  await composed.app.listen({ host: '127.0.0.1', port: 0 });
  closers.push(() => composed.app.close());
  const origin = `http://127.0.0.1:${(composed.app.server.address() as AddressInfo).port}`;
  return { ...composed, origin, routed };
}

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  const body = Buffer.from(await res.arrayBuffer());
  const names: Record<string, string> = {};
  res.headers.forEach((value, name) => (names[name] = value));
  return { status: res.status, headers: names, body };
}

/** Headers that differ between two answers by design (time, remaining budget). */
function stable(headers: Record<string, string>) {
  const { date: _date, ratelimit: _rl, 'cache-control': _cc, 'x-cache': _xc, 'keep-alive': _ka, ...rest } = headers;
  return rest;
}

describe('the fast status path', () => {
  it('answers a repeat exactly as the route answered the first request', async () => {
    const { origin, routed } = await start();
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    const first = await get(url);
    const second = await get(url);
    const third = await get(url);
    // Only the first went through Fastify; so do requests that are not a plain repeat.
    expect(routed).toEqual([`/api/v1/status/127.0.0.1:${java.port}`]);
    expect((await get(`${url}?legacy=false`)).headers['x-cache']).toBe('HIT');
    expect(routed).toHaveLength(2);
    expect(first.status).toBe(200);
    expect(first.headers['x-cache']).toBe('MISS');
    expect([second.headers['x-cache'], third.headers['x-cache']]).toEqual(['HIT', 'HIT']);
    expect(second.body.equals(first.body)).toBe(true);
    expect(stable(second.headers)).toEqual(stable(first.headers));
    expect(second.headers['cache-control']).toMatch(/^public, max-age=(59|60)$/);
    // One budget across both paths: 120 - 1, - 2, - 3.
    expect([first, second, third].map((r) => r.headers.ratelimit)).toEqual([
      expect.stringMatching(/^"status";r=119;t=\d+$/),
      expect.stringMatching(/^"status";r=118;t=\d+$/),
      expect.stringMatching(/^"status";r=117;t=\d+$/),
    ]);
    expect(JSON.parse(third.body.toString())).toMatchObject({ online: true, players: { online: 2, max: 10 }, stale: false });
  });

  it('keeps each client to its limit: the request past it is the route’s 429, counted once', async () => {
    const { origin, routed } = await start({ RATE_LIMIT_STATUS: '3', TRUST_PROXY: 'true' });
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    const client = { 'x-forwarded-for': '198.51.100.7' };
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await get(url, client));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    // The first by the route, two by the fast path, both 429s by the route.
    expect(routed).toHaveLength(3);
    const refused = answers[3]!;
    expect(JSON.parse(refused.body.toString())).toMatchObject({ status: 'error', error: 'rate_limited' });
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.headers.ratelimit).toMatch(/^"status";r=0;t=\d+$/);
    expect(refused.headers['access-control-allow-origin']).toBe('*');
    // Another client (by its forwarded address) has its own budget on the fast path.
    const other = await get(url, { 'x-forwarded-for': '203.0.113.9' });
    expect(other.status).toBe(200);
    expect(other.headers['x-cache']).toBe('HIT');
    expect(other.headers.ratelimit).toMatch(/^"status";r=2;t=\d+$/);
  });

  it('stops serving an answer once it is no longer fresh: the route serves it stale', async () => {
    const clock = new FakeClock(Date.now());
    const { origin } = await start({ STATUS_CACHE_TTL: '5' }, clock);
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    expect((await get(url)).headers['x-cache']).toBe('MISS');
    expect((await get(url)).headers['x-cache']).toBe('HIT');
    clock.advance(6_000);
    const stale = await get(url);
    expect(stale.headers['x-cache']).toBe('STALE');
    expect(JSON.parse(stale.body.toString())).toMatchObject({ online: true, stale: true });
  });

  it('answers health as the route does, counted as a request but not an API request', async () => {
    const { origin, routed, store } = await start();
    const viaRoute = await get(`${origin}/api/v1/status/`);
    const fast = await get(`${origin}/api/v1/status`);
    expect(routed).toEqual(['/api/v1/status/']);
    expect([viaRoute.status, fast.status]).toEqual([200, 200]);
    expect(stable(fast.headers)).toEqual({ ...stable(viaRoute.headers), 'content-length': fast.headers['content-length'] });
    expect(fast.headers['cache-control']).toBe('no-store');
    const body = JSON.parse(fast.body.toString()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'OK', service: expect.any(String), version: expect.any(String), database: 'ok', redis: 'disabled' });
    expect(Date.parse(body.timestamp as string)).not.toBeNaN();
    expect(Object.keys(body)).toEqual(Object.keys(JSON.parse(viaRoute.body.toString()) as object));
    await store.flush();
    const stats = JSON.parse((await get(`${origin}/api/v1/stats`)).body.toString()) as Record<string, number>;
    expect(stats).toMatchObject({ totalRequests: 2, apiRequests: 0 });
  });

  it('counts its answers in /stats and in the metrics like any other request', async () => {
    const { origin, store } = await start({ METRICS_TOKEN: 'fast-path-metrics-token-1' });
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    for (let i = 0; i < 4; i++) expect((await get(url)).status).toBe(200);
    await store.flush();
    const stats = JSON.parse((await get(`${origin}/api/v1/stats`)).body.toString()) as Record<string, number>;
    // 4 status requests (this /stats request is counted once it is answered).
    expect(stats).toMatchObject({ totalRequests: 4, apiRequests: 4, serverQueries: 4, totalChecks: 1 });
    const scrape = await get(`${origin}/metrics`, { authorization: 'Bearer fast-path-metrics-token-1' });
    const families = parseExposition(scrape.body.toString());
    expect(value(families, 'observer_http_requests_total', { route: '/api/v1/status/:address', method: 'GET', status: '200' })).toBe(4);
    expect(value(families, 'observer_status_cache_results_total', { result: 'HIT' })).toBe(3);
  });
});
