/**
 * Traces (docs/monitoring.md, "Traces"), end to end: the real process (src/main.ts through
 * tsx) with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver in this test, one
 * uncached look-up of a real Java server (minecraft-protocol) by a name the test DNS server
 * answers, then a graceful stop, which sends the spans. And the same process without the
 * variables, which must not load OpenTelemetry at all. Webhook deliveries and renders are
 * traced in process (composeApp), against the same receiver.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/ports.mjs';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { watchRow } from '../support/watch-rows.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-tracing-'));
const children: ChildProcess[] = [];
let java: RunningJavaServer;

beforeAll(async () => {
  java = await startJavaServer({ motd: 'Traced server', onlinePlayers: 3, maxPlayers: 20 });
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(async () => {
  await java.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A client address and user agent no attribute may carry. */
const CLIENT_IP = '203.0.113.77';
const USER_AGENT = 'TraceProbe/1.0 (ua-marker-5b1f)';
/** The caller's trace (W3C Trace Context), which the request's span joins. */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

/** Starts Observer as `npm start` would; resolves once it answers, with what it loaded at exit. */
async function startObserver(name: string, env: Record<string, string>) {
  const port = await freePort();
  const modulesFile = join(dir, `${name}.modules.json`);
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './test/support/loaded-modules.mjs', 'src/main.ts'], {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`,
      DNS_SERVERS: '127.0.0.1:5353',
      TARGET_ALLOWLIST: '127.0.0.0/8,::1/128',
      TRUST_PROXY: 'true',
      LOADED_MODULES_FILE: modulesFile,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`Observer exited: ${stderr}`);
    if (i >= 600) throw new Error(`Observer did not start: ${stderr}`);
    const up = await fetch(`${base}/api/v1/status`).then((res) => res.ok, () => false);
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const stop = async () => {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const loaded = JSON.parse(readFileSync(modulesFile, 'utf8')) as string[];
    return { openTelemetry: loaded.filter((file) => file.includes('/node_modules/@opentelemetry/')), stdout, stderr };
  };
  return { base, stop };
}

function lookUp(base: string, address: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/api/v1/status/${address}`, {
    headers: { 'X-Forwarded-For': CLIENT_IP, 'User-Agent': USER_AGENT, ...headers },
  });
}

/** The one span named `name` among `spans`, and that there is exactly one. */
function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found.map((span) => span.name)).toEqual([name]);
  return found[0]!;
}

function childrenOf(spans: ReceivedSpan[], parent: ReceivedSpan): string[] {
  return spans
    .filter((span) => span.parentSpanId === parent.spanId)
    .map((span) => span.name)
    .sort();
}

describe('with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let receiver: OtlpReceiver;
  let answers: { online: Record<string, unknown>; refused: Record<string, unknown> };
  let openTelemetry: string[];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const closed = await freePort();
    const observer = await startObserver('traced', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'observer-under-test' });
    const online = await lookUp(observer.base, `traced.any.observer.test:${java.port}`, { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` });
    expect(online.status).toBe(200);
    expect(online.headers.get('x-cache')).toBe('MISS');
    const refused = await lookUp(observer.base, `refused.any.observer.test:${closed}`);
    expect(refused.status).toBe(200);
    answers = { online: (await online.json()) as Record<string, unknown>, refused: (await refused.json()) as Record<string, unknown> };
    // A request with a body, which Fastify answers once the body is read.
    const bulk = await fetch(`${observer.base}/api/v1/status/bulk`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': CLIENT_IP, 'User-Agent': USER_AGENT },
      body: JSON.stringify({ servers: [{ address: `bulk.any.observer.test:${java.port}` }] }),
    });
    expect(bulk.status).toBe(200);
    // A graceful stop sends the spans still buffered.
    ({ openTelemetry } = await observer.stop());
  }, 120_000);
  afterAll(() => receiver.close());

  it('exports OTLP/HTTP JSON under the configured service name, and loads OpenTelemetry to do it', () => {
    expect(receiver.spans.length).toBeGreaterThan(0);
    expect(new Set(receiver.contentTypes)).toEqual(new Set(['application/json']));
    expect(new Set(receiver.spans.map((span) => span.resource['service.name']))).toEqual(new Set(['observer-under-test']));
    expect(openTelemetry.length).toBeGreaterThan(0);
  });

  it('shows an uncached look-up as a tree of spans under its request, in the caller\'s trace', () => {
    expect(answers.online.online).toBe(true);
    const trace = receiver.spans.filter((span) => span.traceId === TRACE_ID);
    const request = one(trace, 'GET /api/v1/status/:address');
    expect(request.kind).toBe(2);
    expect(request.parentSpanId).toBe(CALLER_SPAN);
    expect(request.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/v1/status/:address',
      'http.response.status_code': 200,
      'url.path': `/api/v1/status/traced.any.observer.test:${java.port}`,
    });

    const lookup = one(trace, 'status.lookup');
    expect(lookup.parentSpanId).toBe(request.spanId);
    expect(lookup.attributes).toMatchObject({
      'server.address': 'traced.any.observer.test',
      'server.port': java.port,
      'minecraft.protocol': 'java',
      'observer.cache': 'MISS',
      'minecraft.online': true,
    });
    // ICMP is asked where raw sockets are allowed; the answer's `icmp` says whether it was.
    const icmp = answers.online.icmp === null ? [] : ['status.icmp'];
    // The cache is read twice: for the answer, then for the entry the new one follows.
    const steps = ['status.cache.get', 'status.resolve', 'status.ping', ...icmp, 'status.cache.get', 'status.cache.set', 'history.record', 'history.record'];
    expect(childrenOf(trace, lookup)).toEqual(steps.sort());

    const resolve = one(trace, 'status.resolve');
    expect(resolve.kind).toBe(3);
    expect(resolve.attributes).toMatchObject({ 'server.address': 'traced.any.observer.test', 'observer.resolve.addresses': 1 });
    expect(childrenOf(trace, resolve)).toEqual(['status.guard']);

    const ping = one(trace, 'status.ping');
    expect(ping.attributes).toMatchObject({ 'minecraft.protocol': 'java', 'network.peer.address': '127.0.0.1', 'network.peer.port': java.port });
    expect(childrenOf(trace, ping)).toEqual(['status.connect']);
    expect(one(trace, 'status.connect').attributes).toMatchObject({ 'network.transport': 'tcp', 'network.peer.address': '127.0.0.1' });
    // The check, and the client's look-up of the server now known (for /trends).
    const rows = trace.filter((span) => span.name === 'history.record').map((span) => span.attributes['observer.history.row']);
    expect(rows.sort()).toEqual(['check', 'lookup']);
    expect(trace.filter((span) => span.name === 'status.cache.get').map((span) => span.attributes['observer.cache.found'])).toEqual([false, false]);

    for (const span of trace) {
      expect(span.durationNs, span.name).toBeGreaterThan(0n);
      expect(span.statusCode, span.name).toBe(0);
    }
  });

  it('marks the ping that failed, with its code, in the look-up of a closed port', () => {
    expect(answers.refused).toMatchObject({ online: false, error_code: 'connection_refused' });
    const lookup = receiver.spans.find((span) => span.name === 'status.lookup' && span.attributes['server.address'] === 'refused.any.observer.test');
    expect(lookup).toBeDefined();
    expect(lookup!.attributes).toMatchObject({ 'minecraft.online': false, 'minecraft.error_code': 'connection_refused' });
    const trace = receiver.spans.filter((span) => span.traceId === lookup!.traceId);
    expect(trace.map((span) => span.traceId)).not.toContain(TRACE_ID);
    const ping = one(trace, 'status.ping');
    expect(ping.parentSpanId).toBe(lookup!.spanId);
    expect(ping.statusCode).toBe(2);
    expect(ping.attributes['error.type']).toBe('connection_refused');
    expect(one(trace, 'status.connect').statusCode).toBe(2);
  });

  it('keeps a request\'s span current after its body is read: the look-ups of a bulk request are its children', () => {
    const request = one(receiver.spans, 'POST /api/v1/status/bulk');
    expect(request.attributes).toMatchObject({ 'http.route': '/api/v1/status/bulk', 'http.response.status_code': 200 });
    const lookup = receiver.spans.find((span) => span.name === 'status.lookup' && span.attributes['server.address'] === 'bulk.any.observer.test');
    expect(lookup?.parentSpanId).toBe(request.spanId);
    expect(lookup?.traceId).toBe(request.traceId);
  });

  it('puts neither the client\'s address nor its user agent in any span', () => {
    const text = JSON.stringify(receiver.spans, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value));
    expect(text).not.toContain(CLIENT_IP);
    expect(text).not.toContain('ua-marker-5b1f');
    expect(text).not.toContain('TraceProbe');
    const keys = new Set(receiver.spans.flatMap((span) => Object.keys(span.attributes)));
    for (const key of ['client.address', 'user_agent.original', 'http.user_agent', 'http.client_ip', 'net.sock.peer.addr']) expect(keys).not.toContain(key);
    // The requests' spans name no peer at all: the peer is the client (or its proxy).
    for (const span of receiver.spans.filter((s) => s.kind === 2)) {
      expect(Object.keys(span.attributes).filter((key) => key.startsWith('network.peer') || key.startsWith('client.'))).toEqual([]);
    }
  });
});

describe('a collector that cannot be reached', () => {
  it('is logged as a warning, and the process still stops cleanly', async () => {
    const closed = await freePort();
    const observer = await startObserver('unreachable', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closed}` });
    expect((await lookUp(observer.base, `unreachable.any.observer.test:${java.port}`)).status).toBe(200);
    // stop() expects exit code 0: the spans that could not be sent do not fail the stop.
    const { stdout } = await observer.stop();
    const warnings = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; context?: string; msg: string });
    expect(warnings.filter((line) => line.context === 'traces')).toMatchObject([{ level: 40, msg: 'background error' }]);
  }, 120_000);
});

describe('without the variables', () => {
  it('loads nothing of OpenTelemetry, through start, a look-up and the stop', async () => {
    const observer = await startObserver('untraced', {});
    const answer = await lookUp(observer.base, `untraced.any.observer.test:${java.port}`);
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { online: boolean }).online).toBe(true);
    const { openTelemetry } = await observer.stop();
    expect(openTelemetry).toEqual([]);
  }, 120_000);
});

describe('webhook deliveries and renders', () => {
  it('sends a span for each delivery, with the webhook\'s host and port but never its URL, and one for a widget drawn', async () => {
    const receiver = await startOtlpReceiver();
    const hook = await startWebhookReceiver();
    const o = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, 'in-process.db')}`, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }), {
      logger: false,
      icmp: null,
    });
    try {
      const now = Date.now();
      const row = watchRow('00000000-0000-4000-8000-00000000c0de', {
        webhook_url: hook.url('/hooks/secret-path-7c2e'),
        verified_at: now,
        proof_seen_at: now,
        expires_at: null,
        state: 'online',
        next_check_at: now + 3_600_000,
      });
      await o.store.watches.insert(row);
      await o.store.watches.saveObservation(row, { state: 'offline', failures: 1, fail_since: now, above: 0, last_checked_at: now }, { kind: 'offline', body: '{"event":"offline"}', now });
      await o.watchDeliveries.tick();
      await o.watchDeliveries.settled();
      expect(hook.requests.map((r) => r.path)).toEqual(['/hooks/secret-path-7c2e']);
      const widget = await o.app.inject({ method: 'GET', url: '/api/v1/widget/normal/demo' });
      expect(widget.statusCode).toBe(200);
      await o.tracer.flush();

      const delivery = one(receiver.spans, 'webhook.deliver');
      expect(delivery.kind).toBe(3);
      // The delivery loop's own trace, not a child of whatever queued the event.
      expect(delivery.parentSpanId).toBe('');
      expect(delivery.attributes).toMatchObject({
        'http.request.method': 'POST',
        'server.address': '127.0.0.1',
        'server.port': hook.port,
        'http.response.status_code': 204,
        'observer.webhook.result': 'delivered',
      });
      expect(JSON.stringify(delivery.attributes)).not.toContain('secret-path');
      expect(one(receiver.spans, 'render.widget').durationNs).toBeGreaterThan(0n);
    } finally {
      await o.app.close();
      await hook.close();
      await receiver.close();
    }
  });
});
