/**
 * Admission control over real HTTP: a client flooding new renders gets 503 `overloaded` once
 * the render slots are full, never more than its share of them, and while the event loop lags
 * new renders and new pings are refused; health and cached statuses are answered throughout.
 * Clients are told apart by X-Forwarded-For (TRUST_PROXY=true, the test is the proxy).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { buildApp } from '../../src/http/app.js';
import { createMetrics } from '../../src/metrics/index.js';
import { systemClock } from '../../src/core/clock.js';
import { createStatusService } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

let server: RunningJavaServer;
interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
}
const apps: Array<{ app: Awaited<ReturnType<typeof buildApp>> }> = [];

/** Log lines written as JSON, parsed. */
function logLines() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, stream };
}

async function listening(env: Record<string, string>, observed: { log?: NodeJS.WritableStream; metrics?: ReturnType<typeof createMetrics>; errors?: unknown[] } = {}) {
  const config = testConfig({ TRUST_PROXY: 'true', RATE_LIMIT_MEDIA: '100000', RATE_LIMIT_STATUS: '100000', ...env });
  const status = createStatusService({ config, clock: systemClock, icmp: null, onError: (error) => observed.errors?.push(error) });
  const app = await buildApp({
    config,
    status,
    logger: observed.log ? { level: 'info', stream: observed.log } : false,
    ...(observed.metrics ? { metrics: observed.metrics } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  const get = async (path: string, client: string): Promise<Answer> => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { 'x-forwarded-for': client } });
    const body = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, body };
  };
  const handle = { app, get };
  apps.push(handle);
  return handle;
}

/**
 * Holds the event loop for 100 ms in every turn of it until stopped: each sample of its delay
 * is about 100 ms, whatever else the machine runs (a timer's hog would run less often, and
 * lag less, on a loaded machine), while I/O still gets one pass per turn.
 */
function hogLoop() {
  let running = true;
  const block = () => {
    if (!running) return;
    const until = performance.now() + 100;
    while (performance.now() < until);
    setImmediate(block);
  };
  setImmediate(block);
  return {
    stop() {
      running = false;
    },
  };
}

const motd = (text: string) => `/api/v1/banner/motd?motd=${encodeURIComponent(text)}`;
const json = (body: Buffer) => JSON.parse(body.toString('utf8')) as Record<string, unknown>;

beforeAll(async () => {
  server = await startJavaServer({ motd: 'admission' });
});
afterEach(async () => {
  for (const { app } of apps.splice(0)) await app.close();
});
afterAll(async () => {
  await server.close();
});

describe('render slots', () => {
  it('refuses a new render with 503 overloaded once the slots are full, while health and a cached status are answered', async () => {
    const { get } = await listening({ RENDER_CONCURRENCY: '1', RENDER_QUEUE: '0', SHED_EVENT_LOOP_DELAY_MS: '10000' });
    const status = `/api/v1/status/127.0.0.1:${server.port}`;
    expect((await get(status, '198.51.100.2')).status).toBe(200);

    const flood = Array.from({ length: 20 }, (_, i) => get(motd(`§aflood ${i}`), '198.51.100.1'));
    const others = [get('/api/v1/status', '198.51.100.2'), get(status, '198.51.100.2')];
    const [floodAnswers, otherAnswers] = await Promise.all([Promise.all(flood), Promise.all(others)]);

    const refused = floodAnswers.filter((r) => r.status === 503);
    expect(floodAnswers.every((r) => r.status === 200 || r.status === 503)).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
    expect(floodAnswers.some((r) => r.status === 200)).toBe(true);
    for (const r of refused) {
      expect(json(r.body)).toMatchObject({ status: 'error', error: 'overloaded' });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(otherAnswers.map((r) => r.status)).toEqual([200, 200]);
    expect(otherAnswers[1]!.headers.get('x-cache')).toBe('HIT');
  });

  it('keeps a slot for other clients: a flooding client holds at most half of them', async () => {
    const { get } = await listening({ RENDER_CONCURRENCY: '2', RENDER_QUEUE: '0', SHED_EVENT_LOOP_DELAY_MS: '10000' });
    for (let round = 0; round < 3; round++) {
      const flood = Array.from({ length: 16 }, (_, i) => get(motd(`§cround ${round} flood ${i}`), '198.51.100.1'));
      const other = get(motd(`§bround ${round} someone else`), '198.51.100.9');
      const [floodAnswers, answer] = await Promise.all([Promise.all(flood), other]);
      expect(floodAnswers.some((r) => r.status === 503)).toBe(true);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('image/png');
    }
  });

  it('refuses new renders and new pings while the event loop lags, and still answers health and cached statuses', async () => {
    const { get } = await listening({ SHED_EVENT_LOOP_DELAY_MS: '50' });
    const status = `/api/v1/status/127.0.0.1:${server.port}`;
    expect((await get(status, '198.51.100.2')).status).toBe(200);
    expect((await get(motd('§6kept'), '198.51.100.2')).status).toBe(200);
    expect((await get(motd('§6kept'), '198.51.100.2')).status).toBe(200);

    const hog = hogLoop();
    try {
      // Once two sampling periods in a row lagged, new renders are refused.
      let render = await get(motd('§6a new text 0'), '198.51.100.3');
      for (let i = 1; i < 100 && render.status === 200; i++) render = await get(motd(`§6a new text ${i}`), '198.51.100.3');
      const ping = await get('/api/v1/status/127.0.0.1:1', '198.51.100.3');
      const widget = await get(`/api/v1/widget/small/127.0.0.1:${server.port}`, '198.51.100.3');
      for (const refused of [render, ping, widget]) {
        expect(refused.status).toBe(503);
        expect(json(refused.body)).toMatchObject({ error: 'overloaded' });
        expect(refused.headers.get('retry-after')).not.toBeNull();
      }
      expect((await get('/api/v1/status', '198.51.100.3')).status).toBe(200);
      const cached = await get(status, '198.51.100.3');
      expect([cached.status, cached.headers.get('x-cache')]).toEqual([200, 'HIT']);
      const keptImage = await get(motd('§6kept'), '198.51.100.3');
      expect([keptImage.status, keptImage.headers.get('x-render-cache')]).toEqual([200, 'HIT']);
    } finally {
      hog.stop();
    }
  });

  it('counts every refusal, logs one line per episode, and serves stale answers without a log line each', async () => {
    const log = logLines();
    const metrics = createMetrics();
    const errors: unknown[] = [];
    const { get } = await listening({ SHED_EVENT_LOOP_DELAY_MS: '50', STATUS_CACHE_TTL: '1' }, { log: log.stream, metrics, errors });
    const status = `/api/v1/status/127.0.0.1:${server.port}`;
    expect((await get(status, '198.51.100.2')).status).toBe(200);
    // Past the TTL, the success is served stale while its refresh is asked for.
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    const hog = hogLoop();
    const renders: Answer[] = [];
    const stale: Answer[] = [];
    let ping: Answer;
    try {
      ping = await get('/api/v1/status/127.0.0.1:1', '198.51.100.3');
      for (let i = 0; i < 100 && ping.status !== 503; i++) ping = await get(`/api/v1/status/127.0.0.1:${i + 2}`, '198.51.100.3');
      // New renders until three are refused (a busy machine may let one through between lags).
      for (let i = 0; i < 100 && renders.filter((r) => r.status === 503).length < 3; i++) renders.push(await get(motd(`§6shed ${i}`), '198.51.100.3'));
      for (let i = 0; i < 5; i++) stale.push(await get(status, '198.51.100.2'));
    } finally {
      hog.stop();
    }
    expect(ping.status).toBe(503);
    expect(renders.filter((r) => r.status === 503)).toHaveLength(3);
    expect(renders.every((r) => r.status === 200 || r.status === 503)).toBe(true);
    // A stale answer is served whether its refresh was refused or not (a refresh let through
    // between two lags makes the next answers fresh again).
    expect(stale.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(stale[0]!.headers.get('x-cache')).toBe('STALE');

    const scraped = await metrics.scrape();
    const count = (work: string) => Number(new RegExp(`observer_shed_total\\{work="${work}",reason="event_loop_lag"\\} (\\d+)`).exec(scraped)?.[1]);
    expect(count('ping')).toBeGreaterThanOrEqual(1);
    expect(count('render')).toBe(3);
    expect(log.lines.filter((line) => line.msg?.toString().startsWith('shedding load'))).toHaveLength(1);
    expect(log.lines.filter((line) => line.level === 50 || line.msg === 'request failed')).toEqual([]);
    expect(errors).toEqual([]);
  });
});
