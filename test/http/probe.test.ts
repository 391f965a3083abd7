/**
 * GET /probe against real Minecraft servers on loopback (Java from minecraft-protocol, Bedrock
 * from bedrock-protocol): the series a scrape reads, checked by Debian's `promtool check
 * metrics` in both formats; bad input answered as the status route answers it; the scrape's
 * timeout; and the guard, the status tier's limit and privacy, held as on the status route.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, freeUdpPort } from '../../scripts/ports.mjs';
import { composeApp } from '../../src/compose.js';
import { systemClock } from '../../src/core/clock.js';
import { buildApp } from '../../src/http/app.js';
import { probeDeadlineMs } from '../../src/metrics/probe.js';
import { OFFLINE_REASONS } from '../../src/metrics/probe-text.js';
import { pingBedrock, pingJava, pingLegacy, queryServer } from '../../src/protocol/index.js';
import { AddressGuard, TargetResolver } from '../../src/resolve/index.js';
import { MemoryStatusCache, StatusService, createStatusService, type PingFunction } from '../../src/status/index.js';
import { logCapture, testConfig } from '../support/app.js';
import { startSilentServer } from '../support/hostile.js';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { parseExposition, samples, value } from '../support/prometheus.js';

/** What Prometheus 2.x sends as Accept. */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

async function appWith(env: Record<string, string> = {}) {
  const config = testConfig(env);
  const status = createStatusService({ config, clock: systemClock });
  const app = await buildApp({ config, status, logger: false });
  await app.ready();
  return { app, status };
}

/** `promtool check metrics` on `text`: its exit code and what it printed (nothing when clean). */
function promtool(text: string): { code: number; output: string } {
  try {
    const output = execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
    return { code: 0, output };
  } catch (error) {
    const failed = error as { status: number; stdout: string; stderr: string };
    return { code: failed.status, output: `${failed.stdout}${failed.stderr}` };
  }
}

let ctx: Awaited<ReturnType<typeof appWith>>;
let java: RunningJavaServer;
let bedrock: RunningBedrockServer;

beforeAll(async () => {
  ctx = await appWith();
  java = await startJavaServer({ maxPlayers: 50, onlinePlayers: 7 });
  bedrock = await startBedrockServer({ port: await freeUdpPort(), playersOnline: 4, playersMax: 30 });
});
afterAll(async () => {
  await ctx.app.close();
  await java.close();
  await bedrock.close();
});

const get = (url: string, headers: Record<string, string> = {}, app = ctx.app) => app.inject({ method: 'GET', url, headers });

describe('GET /probe: the series', () => {
  it('answers a Java server as text 0.0.4 that promtool accepts', async () => {
    const res = await get(`/probe?target=127.0.0.1:${java.port}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(promtool(res.body)).toEqual({ code: 0, output: '' });
    const families = parseExposition(res.body);
    expect(value(families, 'probe_success')).toBe(1);
    expect(value(families, 'probe_duration_seconds')).toBeGreaterThan(0);
    expect(value(families, 'minecraft_players_online', { edition: 'java' })).toBe(7);
    expect(value(families, 'minecraft_players_max', { edition: 'java' })).toBe(50);
    expect(value(families, 'minecraft_latency_seconds', { edition: 'java' })).toBeGreaterThan(0);
    expect(samples(families, 'minecraft_version_info')).toEqual([{ labels: { edition: 'java', name: '1.21.1', protocol: '767' }, value: '1' }]);
    expect(samples(families, 'minecraft_offline_reason').map((s) => [s.labels?.reason, s.value])).toEqual(OFFLINE_REASONS.map((r) => [r, '0']));
    expect(value(families, 'minecraft_cached', { edition: 'java' })).toBe(0);
    expect(value(families, 'minecraft_stale', { edition: 'java' })).toBe(0);
    // The tests run without ICMP: the series is left out rather than reported false.
    expect(families.has('minecraft_icmp_reachable')).toBe(false);
  });

  it('answers OpenMetrics to the Accept header Prometheus sends, which promtool accepts too', async () => {
    const res = await get(`/probe?target=127.0.0.1:${java.port}`, { accept: PROMETHEUS_ACCEPT });
    expect(res.headers['content-type']).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    expect(res.body.endsWith('\n# EOF\n')).toBe(true);
    expect(res.body).toContain('# UNIT probe_duration_seconds seconds\n');
    expect(promtool(res.body)).toEqual({ code: 0, output: '' });
    expect(value(parseExposition(res.body), 'minecraft_players_online', { edition: 'java' })).toBe(7);
  });

  it('answers the second probe from the cache, and the same under /api/v1/probe', async () => {
    const target = `127.0.0.1:${java.port}`;
    await get(`/probe?target=${target}&edition=java`);
    for (const url of [`/probe?target=${target}`, `/api/v1/probe?target=${target}`]) {
      const families = parseExposition((await get(url)).body);
      expect(value(families, 'minecraft_cached', { edition: 'java' }), url).toBe(1);
      expect(value(families, 'probe_success'), url).toBe(1);
    }
  });

  it('answers a Bedrock server, and both editions with edition=auto', async () => {
    const target = `127.0.0.1:${bedrock.port}`;
    const alone = parseExposition((await get(`/probe?target=${target}&edition=bedrock`)).body);
    expect(value(alone, 'probe_success')).toBe(1);
    expect(value(alone, 'minecraft_players_online', { edition: 'bedrock' })).toBe(4);
    expect(value(alone, 'minecraft_players_max', { edition: 'bedrock' })).toBe(30);
    const res = await get(`/probe?target=${target}&edition=auto`, { accept: PROMETHEUS_ACCEPT });
    expect(promtool(res.body)).toEqual({ code: 0, output: '' });
    const both = parseExposition(res.body);
    expect(value(both, 'probe_success')).toBe(1);
    expect(value(both, 'minecraft_players_online', { edition: 'bedrock' })).toBe(4);
    // Nothing speaks Java on that port number (TCP).
    expect(samples(both, 'minecraft_players_online', { edition: 'java' })).toEqual([]);
    expect(value(both, 'minecraft_offline_reason', { edition: 'java', reason: 'connection_refused' })).toBe(1);
    expect(value(both, 'minecraft_offline_reason', { edition: 'bedrock', reason: 'connection_refused' })).toBe(0);
  });

  it('escapes a version name with quotes and backslashes, and promtool reads it back', async () => {
    const odd = await startJavaServer({ extra: { version: { name: 'Paper "fork" C:\\mc', protocol: 767 } } });
    try {
      for (const accept of ['text/plain', PROMETHEUS_ACCEPT]) {
        const res = await get(`/probe?target=127.0.0.1:${odd.port}`, { accept });
        expect(promtool(res.body), accept).toEqual({ code: 0, output: '' });
        expect(res.body).toContain('name="Paper \\"fork\\" C:\\\\mc"');
      }
      const families = parseExposition((await get(`/probe?target=127.0.0.1:${odd.port}`)).body);
      expect(samples(families, 'minecraft_version_info')[0]?.labels?.name).toBe('Paper "fork" C:\\mc');
    } finally {
      await odd.close();
    }
  });

  it('a server that does not answer is probe_success 0 with its reason; so is a name without DNS records', async () => {
    const cases: Array<[string, string]> = [
      [`127.0.0.1:${await freePort()}`, 'connection_refused'],
      ['missing.observer.test', 'dns_not_found'],
    ];
    for (const [target, reason] of cases) {
      const res = await get(`/probe?target=${target}`);
      expect(res.statusCode, target).toBe(200);
      expect(promtool(res.body)).toEqual({ code: 0, output: '' });
      const families = parseExposition(res.body);
      expect(value(families, 'probe_success'), target).toBe(0);
      expect(samples(families, 'minecraft_offline_reason', { edition: 'java' }).filter((s) => s.value === '1').map((s) => s.labels?.reason), target).toEqual([reason]);
      expect(families.has('minecraft_players_online'), target).toBe(false);
      expect(families.has('minecraft_version_info'), target).toBe(false);
    }
  });

  it('with query=true, says whether the Query answered', async () => {
    // minecraft-protocol's server has no Query listener: the Query times out, the ping answers.
    const families = parseExposition((await get(`/probe?target=127.0.0.1:${java.port}&query=1`)).body);
    expect(value(families, 'probe_success')).toBe(1);
    expect(value(families, 'minecraft_query_success', { edition: 'java' })).toBe(0);
  });
});

describe('GET /probe: bad input, as the status route answers it', () => {
  it.each([
    ['/probe', 'invalid_parameter'],
    ['/probe?target=', 'invalid_parameter'],
    ['/probe?target=a..b', 'invalid_address'],
    ['/probe?target=play.example.net&edition=legacy', 'invalid_parameter'],
    ['/probe?target=play.example.net&query=maybe', 'invalid_parameter'],
    ['/probe?target=10.0.0.1', 'target_refused'],
    ['/api/v1/probe?target=10.0.0.1', 'target_refused'],
  ])('%s: 400 %s', async (url, error) => {
    const res = await get(url);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toMatchObject({ status: 'error', error });
  });

  it('PROBE_ENABLED=false: both paths answer 404 in the one error shape', async () => {
    const off = await appWith({ PROBE_ENABLED: 'false' });
    try {
      for (const url of [`/probe?target=127.0.0.1:${java.port}`, `/api/v1/probe?target=127.0.0.1:${java.port}`]) {
        const res = await get(url, {}, off.app);
        expect(res.statusCode, url).toBe(404);
        expect(res.json(), url).toMatchObject({ status: 'error', error: 'not_found' });
      }
    } finally {
      await off.app.close();
    }
  });
});

describe('GET /probe: the scrape timeout', () => {
  it.each<[number | undefined, number, number | null]>([
    [undefined, 5000, null],
    [0, 5000, null],
    [-3, 5000, null],
    [10, 5000, 5000],
    [3, 5000, 2500],
    [1.5, 10_000, 1000],
    // However short the timeout sent, the look-up gets half a second.
    [0.6, 5000, 500],
    [1e-300, 5000, 500],
  ])('a scrape timeout of %j s with PING_TIMEOUT_MS %d: waits %j ms', (seconds, pingTimeoutMs, expected) => {
    expect(probeDeadlineMs(seconds, pingTimeoutMs)).toBe(expected);
  });

  it('reads the header in the decimal grammar of numbers: another form is no timeout at all', async () => {
    const slow = await appWith({ PING_TIMEOUT_MS: '1000' });
    try {
      for (const [header, cut] of [
        ['0x10', false],
        ['1e1', false],
        [' 10', false],
        ['1e-300', false],
        ['.6', true],
      ] as const) {
        // A server of its own each: a look-up's failure is cached.
        const silent = await startSilentServer();
        const res = await get(`/probe?target=127.0.0.1:${silent.port}`, { 'x-prometheus-scrape-timeout-seconds': header }, slow.app);
        // Without a usable header the probe waits for the look-up's own end (PING_TIMEOUT_MS), which
        // gives the same offline reason: what tells them apart is whether the ping still runs.
        expect(value(parseExposition(res.body), 'minecraft_offline_reason', { edition: 'java', reason: 'timeout' }), header).toBe(1);
        expect(slow.status.activePings === 1, header).toBe(cut);
        await vi.waitFor(() => expect(slow.status.activePings).toBe(0), { timeout: 5000 });
        await silent.close();
      }
    } finally {
      await slow.app.close();
    }
  });

  it('cuts the wait, not the ping: a silent server is answered as timeout while its ping goes on', async () => {
    const slow = await appWith({ PING_TIMEOUT_MS: '20000' });
    const silent = await startSilentServer();
    try {
      const res = await get(`/probe?target=127.0.0.1:${silent.port}`, { 'x-prometheus-scrape-timeout-seconds': '1.5' }, slow.app);
      expect(res.statusCode).toBe(200);
      // Answered within PING_TIMEOUT_MS: the ping it started is still waiting on the server.
      expect(slow.status.activePings).toBe(1);
      const families = parseExposition(res.body);
      expect(value(families, 'probe_success')).toBe(0);
      expect(value(families, 'minecraft_offline_reason', { edition: 'java', reason: 'timeout' })).toBe(1);
      expect(value(families, 'minecraft_cached', { edition: 'java' })).toBe(0);
    } finally {
      await silent.close();
      await slow.app.close();
    }
  });
});

describe('GET /probe: guard, limits and privacy as on the status route', () => {
  it('with the guard on, refuses loopback names and literals without connecting to them', async () => {
    const guarded = await appWith({ TARGET_ALLOWLIST: '' });
    const server = await startJavaServer({ motd: 'private' });
    try {
      for (const target of [`127.0.0.1:${server.port}`, `mc.observer.test:${server.port}`, `[::ffff:127.0.0.1]:${server.port}`]) {
        const res = await get(`/probe?target=${encodeURIComponent(target)}`, {}, guarded.app);
        expect(res.statusCode, target).toBe(400);
        expect(res.json().error, target).toBe('target_refused');
      }
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
      await guarded.app.close();
    }
  });

  it('refuses a private literal (10.0.0.1) before any ping, Query or ICMP echo is sent', async () => {
    const config = testConfig({ TARGET_ALLOWLIST: '' });
    // What the service would send, recorded on its way to the real clients.
    const sent: string[] = [];
    const counted = (ping: PingFunction): PingFunction => (target) => {
      sent.push(`ping ${target.ip}`);
      return ping(target);
    };
    const status = new StatusService({
      resolver: new TargetResolver({ dnsServers: config.dnsServers, guard: new AddressGuard(config.targetAllowlist) }),
      ping: { java: counted(pingJava), legacy: counted(pingLegacy), bedrock: counted(pingBedrock) },
      queryServer: (target) => {
        sent.push(`query ${target.ip}`);
        return queryServer(target);
      },
      // No echo is sent from the tests: the call alone is recorded, as where ICMP is unavailable.
      icmp: async (ip) => {
        sent.push(`icmp ${ip}`);
        return null;
      },
      cache: new MemoryStatusCache({ now: () => systemClock.now() }),
      clock: systemClock,
      ttlSeconds: config.statusCacheTtlSeconds,
      pingTimeoutMs: config.pingTimeoutMs,
      maxConcurrentPings: config.maxConcurrentPings,
    });
    const app = await buildApp({ config, status, logger: false });
    try {
      for (const edition of ['java', 'bedrock', 'auto']) {
        const res = await get(`/probe?target=10.0.0.1&edition=${edition}&query=true`, {}, app);
        expect(res.statusCode, edition).toBe(400);
        expect(res.json().error, edition).toBe('target_refused');
      }
      expect(sent).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('draws on the status tier: the limit is shared with the status route, and spent it answers 429 JSON', async () => {
    const limited = await appWith({ RATE_LIMIT_STATUS: '3' });
    const target = `127.0.0.1:${java.port}`;
    try {
      expect((await get(`/api/v1/status/${target}`, {}, limited.app)).statusCode).toBe(200);
      const first = await get(`/probe?target=${target}`, {}, limited.app);
      expect(first.statusCode).toBe(200);
      expect(first.headers['ratelimit-policy']).toBe('"status";q=3;w=60');
      expect(first.headers.ratelimit).toMatch(/^"status";r=1;t=\d+$/);
      expect((await get(`/api/v1/probe?target=${target}`, {}, limited.app)).statusCode).toBe(200);
      for (const url of [`/probe?target=${target}`, `/api/v1/status/${target}`]) {
        const res = await get(url, {}, limited.app);
        expect(res.statusCode, url).toBe(429);
        expect(res.json(), url).toMatchObject({ status: 'error', error: 'rate_limited' });
        expect(Number(res.headers['retry-after']), url).toBeGreaterThan(0);
      }
    } finally {
      await limited.app.close();
    }
  });

  it('keeps neither the client IP nor its user agent in the database or the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'observer-probe-privacy-'));
    const ip = '203.0.113.77';
    const ua = 'ProbePrivacy/1.0 (marker-probe-7f3a)';
    const log = logCapture();
    const db = join(dir, 'observer.db');
    const { app } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${db}`, TRUST_PROXY: 'true', LOG_LEVEL: 'trace', LOG_REQUESTS: 'true' }), {
      logger: { level: 'trace', stream: log.stream },
      icmp: null,
    });
    try {
      const headers = { 'x-forwarded-for': ip, 'user-agent': ua };
      for (const url of [`/probe?target=127.0.0.1:${java.port}`, `/api/v1/probe?target=127.0.0.1:${bedrock.port}&edition=auto&query=true`, '/probe?target=10.0.0.1', '/probe']) {
        expect((await app.inject({ url, headers })).statusCode, url).toBeLessThan(500);
      }
      await app.close();
      const files = [db, `${db}-wal`, `${db}-shm`].flatMap((file) => {
        try {
          return [readFileSync(file)];
        } catch {
          return [];
        }
      });
      expect(files.length).toBeGreaterThan(0);
      expect(log.lines.some((line) => line.includes('/probe'))).toBe(true);
      for (const bytes of [...files, Buffer.from(log.lines.join('\n'))]) {
        for (const secret of [ip, ua]) {
          expect(bytes.includes(Buffer.from(secret, 'utf8'))).toBe(false);
          expect(bytes.includes(Buffer.from(secret, 'utf16le'))).toBe(false);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
