/**
 * The front (src/http/fast-status.ts) over a real socket, against the whole app as main.ts
 * composes it: a plain status request is answered without Fastify, and must be
 * indistinguishable from the route's own answer (body, headers, rate limit, 429, stale, errors,
 * /stats, metrics). The route's answer for the same cache entry is had by adding a query string
 * (`?legacy=false`), which the front leaves to Fastify. app.inject() never reaches the front,
 * so every request here is real HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { composeApp, type ComposeOptions } from '../../src/compose.js';
import { ClientHasher } from '../../src/core/client-hash.js';
import { systemClock } from '../../src/core/clock.js';
import { ObserverError } from '../../src/core/errors.js';
import { clientAddress } from '../../src/http/client-key.js';
import { FastStatus } from '../../src/http/fast-status.js';
import { MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import { RequestSteps } from '../../src/http/request-steps.js';
import { StatusAnswers } from '../../src/http/status-answer.js';
import { createStatusService, type StatusLookup } from '../../src/status/index.js';
import { logCapture, testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { parseExposition, samples, value } from '../support/prometheus.js';

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

async function start(env: Record<string, string> = {}, clock?: FakeClock, options: Pick<ComposeOptions, 'logger' | 'slowRequestMs'> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-fast-'));
  dirs.push(dir);
  const config = testConfig({ DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`, LOG_LEVEL: 'silent', ...env });
  const composed = await composeApp(config, { icmp: null, logger: false, ...(clock ? { clock } : {}), ...options });
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
  it('answers a plain request, cached or not, exactly as the route answers it', async () => {
    const { origin, routed } = await start();
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    const first = await get(url);
    const viaRoute = await get(`${url}?legacy=false`);
    const third = await get(url);
    // Only the request with a query string went through Fastify.
    expect(routed).toEqual([`/api/v1/status/127.0.0.1:${java.port}?legacy=false`]);
    expect(first.status).toBe(200);
    expect([first.headers['x-cache'], viaRoute.headers['x-cache'], third.headers['x-cache']]).toEqual(['MISS', 'HIT', 'HIT']);
    expect(first.body.equals(viaRoute.body)).toBe(true);
    expect(third.body.equals(viaRoute.body)).toBe(true);
    expect(stable(first.headers)).toEqual(stable(viaRoute.headers));
    expect(stable(third.headers)).toEqual(stable(viaRoute.headers));
    // The seconds left of the TTL: 60 less whatever this machine took since the ping.
    for (const answer of [first, third]) expect(Number(/^public, max-age=(\d+)$/.exec(answer.headers['cache-control'] ?? '')?.[1])).toBeGreaterThan(40);
    expect(JSON.parse(third.body.toString())).toMatchObject({ online: true, players: { online: 2, max: 10 }, stale: false });
  });

  it('answers errors as the route does, and leaves encoded, bracketed and over-long addresses to it', async () => {
    const { origin, routed } = await start();
    const base = `${origin}/api/v1/status`;
    for (const [address, status, code] of [
      ['nx-fast.observer.test', 404, 'host_not_found'],
      [`127.0.0.1:99999`, 400, 'invalid_address'],
      ['a..b', 400, 'invalid_address'],
    ] as const) {
      const fast = await get(`${base}/${address}`);
      const viaRoute = await get(`${base}/${address}?legacy=false`);
      expect(fast.status).toBe(status);
      expect(JSON.parse(fast.body.toString())).toMatchObject({ status: 'error', error: code });
      expect(fast.body.equals(viaRoute.body)).toBe(true);
      expect(stable(fast.headers)).toEqual(stable(viaRoute.headers));
    }
    expect(routed.every((url) => url.endsWith('?legacy=false'))).toBe(true);
    routed.length = 0;
    const bracketed = await get(`${base}/[::1]:${java.port}`);
    const encoded = await get(`${base}/127.0.0.1%3A${java.port}`);
    const long = await get(`${base}/${'a'.repeat(256)}`);
    expect(routed).toEqual([`/api/v1/status/[::1]:${java.port}`, `/api/v1/status/127.0.0.1%3A${java.port}`, `/api/v1/status/${'a'.repeat(256)}`]);
    expect([bracketed.status, encoded.status, long.status]).toEqual([200, 200, 400]);
    expect(JSON.parse(encoded.body.toString())).toMatchObject({ online: true });
    expect(JSON.parse(long.body.toString())).toMatchObject({ status: 'error', error: 'invalid_parameter' });
  });

  it('keeps each client to its limit: the request past it is a 429, answered before Fastify too', async () => {
    const { origin, routed } = await start({ RATE_LIMIT_STATUS: '3', TRUST_PROXY: 'true' });
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    const client = { 'x-forwarded-for': '198.51.100.7' };
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await get(url, client));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    expect(routed).toEqual([]);
    const refused = answers[3]!;
    expect(JSON.parse(refused.body.toString())).toMatchObject({ status: 'error', error: 'rate_limited' });
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.headers.ratelimit).toMatch(/^"status";r=0;t=\d+$/);
    expect(refused.headers['access-control-allow-origin']).toBe('*');
    // Another client (by its forwarded address) has its own budget on the fast path.
    const other = await get(url, { 'x-forwarded-for': '203.0.113.9' });
    expect(other.status).toBe(200);
    expect(other.headers['x-cache']).toBe('HIT');
  });

  it("keeps each client behind a proxy to its own budget when one kept-alive connection carries them all", async () => {
    const { origin, routed } = await start({ RATE_LIMIT_STATUS: '2', TRUST_PROXY: 'true' });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    closers.push(async () => agent.destroy());
    const ports = new Set<number>();
    const ask = (forwarded: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${origin}/api/v1/status/127.0.0.1:${java.port}`, { agent, headers: { 'x-forwarded-for': forwarded } }, (res) => {
          ports.add(req.socket!.localPort!);
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        req.end();
      });
    const statuses: Array<[string, number]> = [];
    for (const client of ['198.51.100.1', '198.51.100.2', '198.51.100.1', '198.51.100.2', '198.51.100.1', '198.51.100.2', '198.51.100.3']) {
      statuses.push([client, await ask(client)]);
    }
    expect(ports.size).toBe(1);
    expect(routed).toEqual([]);
    expect(statuses).toEqual([
      ['198.51.100.1', 200],
      ['198.51.100.2', 200],
      ['198.51.100.1', 200],
      ['198.51.100.2', 200],
      ['198.51.100.1', 429],
      ['198.51.100.2', 429],
      ['198.51.100.3', 200],
    ]);
  });

  it('charges a request the route’s schema refuses, and answers it in the same shape', async () => {
    const { origin } = await start({ RATE_LIMIT_STATUS: '2' });
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}?queryPort=none`;
    const answers = [await get(url), await get(url), await get(url)];
    expect(answers.map((a) => a.status)).toEqual([400, 400, 429]);
    expect(JSON.parse(answers[0]!.body.toString())).toMatchObject({ status: 'error', error: 'invalid_parameter', message: expect.stringContaining('queryPort') });
    expect(answers[0]!.headers.ratelimit).toMatch(/^"status";r=1;t=\d+$/);
    expect(answers[1]!.headers['access-control-allow-origin']).toBe('*');
    expect(JSON.parse(answers[2]!.body.toString())).toMatchObject({ status: 'error', error: 'rate_limited' });
    // HEAD through the route: the GET's headers, no body.
    const head = await fetch(`${origin}/api/v1/status/127.0.0.1:${java.port}?legacy=false`, { method: 'HEAD' });
    expect(head.status).toBe(429);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  it('sends no client’s RateLimit on an answer shared caches may store; its 429 and its errors carry it', async () => {
    const { origin } = await start({ RATE_LIMIT_STATUS: '3' });
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    const answers = [await get(url), await get(`${url}?legacy=false`)];
    for (const answer of answers) {
      expect(answer.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
      expect(answer.headers['ratelimit-policy']).toBe('"status";q=3;w=60');
      expect(answer.headers.ratelimit).toBeUndefined();
    }
    const notFound = await get(`${origin}/api/v1/status/nx-fast.observer.test`);
    expect(notFound.status).toBe(404);
    expect(notFound.headers.ratelimit).toMatch(/^"status";r=0;t=\d+$/);
    const refused = await get(url);
    expect(refused.status).toBe(429);
    expect(refused.headers.ratelimit).toMatch(/^"status";r=0;t=\d+$/);
  });

  it('serves an answer past its TTL stale, as the route does', async () => {
    const clock = new FakeClock(Date.now());
    const { origin } = await start({ STATUS_CACHE_TTL: '5' }, clock);
    const url = `${origin}/api/v1/status/127.0.0.1:${java.port}`;
    expect((await get(url)).headers['x-cache']).toBe('MISS');
    expect((await get(url)).headers['x-cache']).toBe('HIT');
    clock.advance(6_000);
    const stale = await get(url);
    expect(stale.headers['x-cache']).toBe('STALE');
    expect(stale.headers['cache-control']).toBe('public, max-age=0');
    expect(JSON.parse(stale.body.toString())).toMatchObject({ online: true, stale: true });
    const viaRoute = await get(`${url}?legacy=false`);
    expect(stable(stale.headers)).toEqual(stable(viaRoute.headers));
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

  it('logs a slow answer as a warning, as the route does, without the client address', async () => {
    const { lines, stream } = logCapture();
    // Every request counts as slow with a threshold of 0 ms.
    const { origin, routed } = await start({ TRUST_PROXY: 'true' }, undefined, { logger: { level: 'info', stream }, slowRequestMs: 0 });
    expect((await get(`${origin}/api/v1/status/127.0.0.1:${java.port}`, { 'x-forwarded-for': '203.0.113.77' })).status).toBe(200);
    expect(routed).toEqual([]);
    const slow = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.msg === 'slow request');
    expect(slow).toEqual([expect.objectContaining({ level: 40, route: '/api/v1/status/:address', method: 'GET', statusCode: 200, durationMs: expect.any(Number) })]);
    expect(lines.join('\n')).not.toContain('203.0.113.77');
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

describe('whichever entrance answers', () => {
  /** Requests, answers and records (metrics, /stats) by status code; the scrape itself is left out. */
  async function records(origin: string, store: { flush(): Promise<void> }) {
    const scrape = await get(`${origin}/metrics`, { authorization: `Bearer ${TOKEN}` });
    const families = parseExposition(scrape.body.toString());
    const requests = Object.fromEntries(
      samples(families, 'observer_http_requests_total')
        .filter((s) => s.labels?.route !== '/metrics' && s.labels?.route !== '/api/v1/stats')
        .map((s) => [`${s.labels?.method} ${s.labels?.route} ${s.labels?.status}`, Number(s.value)]),
    );
    const durations = Object.fromEntries(
      samples(families, 'observer_http_request_duration_seconds_count')
        .filter((s) => s.labels?.route !== '/metrics' && s.labels?.route !== '/api/v1/stats')
        .map((s) => [`${s.labels?.method} ${s.labels?.route} ${s.labels?.status}`, Number(s.value)]),
    );
    const cache = Object.fromEntries(samples(families, 'observer_status_cache_results_total').map((s) => [s.labels?.result, Number(s.value)]));
    await store.flush();
    const stats = JSON.parse((await get(`${origin}/api/v1/stats`)).body.toString()) as Record<string, number>;
    return { requests, durations, cache, stats: { totalRequests: stats.totalRequests, apiRequests: stats.apiRequests, serverQueries: stats.serverQueries } };
  }

  /** What `after` has more of than `before`, key by key. */
  function delta<T extends Record<string, Record<string, number | undefined>>>(before: T, after: T) {
    const out: Record<string, Record<string, number>> = {};
    for (const [group, values] of Object.entries(after)) {
      out[group] = {};
      for (const [key, n] of Object.entries(values)) {
        const d = (n ?? 0) - (before[group]?.[key] ?? 0);
        if (d !== 0) out[group]![key] = d;
      }
    }
    return out;
  }

  const TOKEN = 'entrances-metrics-token-1';

  it('gives the same request the same status, headers and body, and records it the same', async () => {
    // A fixed clock: max-age and the rate limit's reset read the same on both sides.
    const clock = new FakeClock(Date.now());
    const { origin, store, routed } = await start({ RATE_LIMIT_STATUS: '3', TRUST_PROXY: 'true', METRICS_TOKEN: TOKEN }, clock);
    const target = `127.0.0.1:${java.port}`;
    expect((await get(`${origin}/api/v1/status/${target}`, { 'x-forwarded-for': '192.0.2.1' })).headers['x-cache']).toBe('MISS');
    // Two clients with the same history: one by the front, one by Fastify (a query string).
    const front = { 'x-forwarded-for': '198.51.100.10' };
    const fastify = { 'x-forwarded-for': '198.51.100.20' };
    const cases = [target, 'nx-entrances.observer.test', '127.0.0.1:0', target];
    for (const [i, address] of cases.entries()) {
      routed.length = 0;
      const before = await records(origin, store);
      const viaFront = await get(`${origin}/api/v1/status/${address}`, front);
      const middle = await records(origin, store);
      const viaFastify = await get(`${origin}/api/v1/status/${address}?legacy=false`, fastify);
      const after = await records(origin, store);
      expect(routed.filter((url) => url.startsWith('/api/v1/status/'))).toEqual([`/api/v1/status/${address}?legacy=false`]);
      // The fourth status request of each client is over its limit of 3.
      expect(viaFront.status).toBe([200, 404, 400, 429][i]);
      expect(viaFastify.status).toBe(viaFront.status);
      const { date: _d1, ...frontHeaders } = viaFront.headers;
      const { date: _d2, ...fastifyHeaders } = viaFastify.headers;
      expect(fastifyHeaders).toEqual(frontHeaders);
      expect(viaFastify.body.toString()).toBe(viaFront.body.toString());
      expect(delta(middle, after)).toEqual(delta(before, middle));
    }
  });
});

describe('the front when its own answer fails', () => {
  /** The front alone on a real socket, with the given look-up and recorder. */
  async function serve(status: StatusLookup, record: () => void) {
    const errors: unknown[] = [];
    const answers = new StatusAnswers({
      status,
      hasher: new ClientHasher(systemClock),
      clientAddress: clientAddress(false),
      rateLimit: { store: new MemoryRateLimitStore(), limit: 100, onError: (error) => errors.push(error) },
      onError: (error) => errors.push(error),
      admitPing: () => {},
      headers: [],
    });
    const fast = new FastStatus({
      answers,
      prefix: '/api/v1',
      health: (res) => res.end('{}'),
      steps: new RequestSteps([{ name: 'record', after: record }]),
      log: pino({ enabled: false }),
      onError: (error) => errors.push(error),
    });
    const server = createServer((req, res) => {
      if (!fast.handle(req, res)) res.writeHead(418).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );
    return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, errors };
  }

  it('answers 500 and reports the error when the answer cannot be written, with no unhandled rejection', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      // A header value Node refuses to write (a line break) fails writeHead.
      const refused: StatusLookup = {
        lookup: () => Promise.reject(new ObserverError('service_busy', 503, 'Busy.', { headers: { 'Retry-After': '5\nX' } })),
      };
      const broken = await serve(refused, () => {});
      const answer = await get(`${broken.origin}/api/v1/status/example.com`);
      expect(answer.status).toBe(500);
      expect(JSON.parse(answer.body.toString())).toMatchObject({ status: 'error', error: 'internal_error' });
      expect(broken.errors.some((e) => (e as { code?: string }).code === 'ERR_INVALID_CHAR')).toBe(true);
      // A throw after the answer was sent (the accounting) is reported, not left unhandled.
      const service = createStatusService({ config: testConfig(), clock: systemClock, icmp: null });
      const late = await serve(service, () => {
        throw new Error('accounting failed');
      });
      expect((await get(`${late.origin}/api/v1/status/127.0.0.1:${java.port}`)).status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
      expect(late.errors).toEqual([expect.objectContaining({ message: 'accounting failed' })]);
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});
