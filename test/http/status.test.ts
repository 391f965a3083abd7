import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBedrockServer, startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { freePort, freeUdpPort } from '../../scripts/ports.mjs';
import { startSilentServer } from '../support/hostile.js';
import { testConfig } from '../support/app.js';
import { startPrivateDns } from '../support/dns.js';
import { openApiValidator } from '../support/openapi.js';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { serverId } from '../../src/status/server-id.js';
import { systemClock } from '../../src/core/clock.js';

// A 1x1 PNG as the favicon (valid data URL).
const FAVICON =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

async function appWith(env: Record<string, string> = {}) {
  const config = testConfig(env);
  const status = createStatusService({ config, clock: systemClock });
  const app = await buildApp({ config, status, logger: false });
  await app.ready();
  return { app, status };
}

type Running = Awaited<ReturnType<typeof appWith>>;
let ctx: Running;
let java: RunningJavaServer;
let validate: Awaited<ReturnType<typeof openApiValidator>>;

beforeAll(async () => {
  ctx = await appWith();
  validate = await openApiValidator(ctx.app);
  java = await startJavaServer({
    motd: '§aWelcome §lhome',
    maxPlayers: 50,
    onlinePlayers: 7,
    favicon: FAVICON,
    sample: [{ name: 'Steve', id: '8667ba71-b85a-4004-af54-457a9734eed7' }],
  });
});
afterAll(async () => {
  await ctx.app.close();
  await java.close();
});

const get = (url: string, app = ctx.app) => app.inject({ method: 'GET', url });

describe('GET /api/v1/status/{address}: online servers', () => {
  it('answers a modern Java server with every field of the spec', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${java.port}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-cache']).toBe('MISS');
    expect(res.headers['cache-control']).toMatch(/^public, max-age=(59|60)$/);
    const body = res.json();
    expect(validate('ServerStatus', body)).toEqual([]);
    expect(body).toMatchObject({
      query: { host: '127.0.0.1', port: java.port, legacy: false, bedrock: false },
      server_id: serverId('java', '127.0.0.1', java.port),
      ip_address: '127.0.0.1',
      online: true,
      error: null,
      players: { online: 7, max: 50, sample: [{ name: 'Steve', id: '8667ba71-b85a-4004-af54-457a9734eed7' }] },
      favicon: FAVICON,
      stale: false,
      srvRecord: null,
    });
    expect(body.version).toEqual({ name: expect.any(String), protocol: expect.any(Number) });
    expect(body.motd.clean).toBe('Welcome home');
    expect(body.motd.raw).toContain('§a');
    expect(body.motd.html).toContain('Welcome');
    expect(body.roundTripLatency).toBeGreaterThanOrEqual(0);
    expect([true, null]).toContain(body.icmp);
    expect(Date.parse(body.checked_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('serves a second request from the cache without a new connection', async () => {
    const server = await startJavaServer({ motd: 'cached' });
    try {
      const first = await get(`/api/v1/status/127.0.0.1:${server.port}`);
      expect(first.headers['x-cache']).toBe('MISS');
      const connections = server.connections();
      const second = await get(`/api/v1/status/127.0.0.1:${server.port}`);
      expect(second.headers['x-cache']).toBe('HIT');
      expect(second.json().checked_at).toBe(first.json().checked_at);
      expect(server.connections()).toBe(connections);
    } finally {
      await server.close();
    }
  });

  it('answers in legacy mode', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${java.port}?legacy=true`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(validate('ServerStatus', body)).toEqual([]);
    expect(body.query).toEqual({ host: '127.0.0.1', port: java.port, legacy: true, bedrock: false });
    expect(body.online).toBe(true);
    expect(body.players).toMatchObject({ online: 7, max: 50 });
    expect(body.motd.clean).toBe('Welcome home');
  });

  it('answers a Bedrock server with its extra fields', async () => {
    const port = await freeUdpPort();
    const bedrock = await startBedrockServer({ port, motd: 'Bedrock Home', levelName: 'Overworld', playersOnline: 3, playersMax: 30 });
    try {
      const res = await get(`/api/v1/status/127.0.0.1:${port}?bedrock=true`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(validate('ServerStatus', body)).toEqual([]);
      expect(body).toMatchObject({
        query: { host: '127.0.0.1', port, legacy: false, bedrock: true },
        server_id: serverId('bedrock', '127.0.0.1', port),
        online: true,
        players: { online: 3, max: 30 },
      });
      expect(body.motd.clean).toContain('Bedrock Home');
      expect(body.edition).toBe('MCPE');
    } finally {
      await bedrock.close();
    }
  });

  it('answers an IPv6 literal, bracketed with a port', async () => {
    const server = await startJavaServer({ host: '::1', motd: 'six' });
    try {
      const res = await get(`/api/v1/status/${encodeURIComponent(`[::1]:${server.port}`)}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ online: true, ip_address: '::1', query: { host: '::1', port: server.port } });
    } finally {
      await server.close();
    }
  });

  it('follows the SRV record of a name without a port, and sends the SRV target as handshake host', async () => {
    // The server listens on an ephemeral port; a private DNS server names it in the SRV record.
    const server = await startJavaServer({ motd: 'via srv' });
    const dns = await startPrivateDns([
      'host-record=mc.observer.test,127.0.0.1',
      `srv-host=_minecraft._tcp.srv.observer.test,mc.observer.test,${server.port},0,5`,
    ]);
    const { app } = await appWith({ DNS_SERVERS: dns.server });
    try {
      const res = await get('/api/v1/status/SRV.Observer.Test.', app);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({
        online: true,
        ip_address: '127.0.0.1',
        query: { host: 'srv.observer.test', port: server.port },
        server_id: serverId('java', 'srv.observer.test', 25565),
      });
      expect(body.srvRecord).toMatchObject({ target: 'mc.observer.test', port: server.port });
      expect(server.handshakeHosts).toContain('mc.observer.test');
    } finally {
      await app.close();
      await dns.close();
      await server.close();
    }
  });

  it('resolves a host name to its A record', async () => {
    const res = await get(`/api/v1/status/mc.observer.test:${java.port}`);
    expect(res.json()).toMatchObject({ online: true, ip_address: '127.0.0.1', query: { host: 'mc.observer.test', port: java.port } });
  });
});

describe('GET /api/v1/status/{address}: failures', () => {
  it('a closed port is a 200 with online false and a safe error', async () => {
    const port = await freePort();
    const res = await get(`/api/v1/status/127.0.0.1:${port}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(validate('ServerStatus', body)).toEqual([]);
    expect(body).toMatchObject({ online: false, error: 'connection refused', version: null, players: null, motd: null, stale: false });
  });

  it.each(['missing.observer.test', 'empty.observer.test'])('a name with no records (%s) is a 404', async (name) => {
    const res = await get(`/api/v1/status/${name}`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ status: 'error', error: 'host_not_found' });
  });

  it.each([
    ['bad characters', 'exa mple.com'],
    ['a port out of range', 'mc.observer.test:70000'],
    ['port zero', 'mc.observer.test:0'],
    ['an odd IPv4 spelling', '2130706433'],
    ['an empty label', 'a..b'],
    ['too long', `${'a'.repeat(60)}.`.repeat(5) + 'com'],
  ])('an invalid address (%s) is a 400 saying what is wrong', async (_what, address) => {
    const res = await get(`/api/v1/status/${encodeURIComponent(address)}`);
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.status).toBe('error');
    expect(['invalid_address', 'invalid_parameter']).toContain(body.error);
    expect(body.message.length).toBeGreaterThan(10);
  });

  it('legacy and bedrock together is a 400', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${java.port}?legacy=true&bedrock=true`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 'error', error: 'invalid_query' });
  });

  it('a non-boolean flag is a 400 naming it', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${java.port}?bedrock=maybe`);
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain('bedrock');
  });

  it('with the guard on, loopback targets are refused and never contacted', async () => {
    const guarded = await appWith({ TARGET_ALLOWLIST: '' });
    const server = await startJavaServer({ motd: 'private' });
    try {
      for (const address of [`127.0.0.1:${server.port}`, `mc.observer.test:${server.port}`, `[::ffff:127.0.0.1]:${server.port}`, `dual.observer.test:${server.port}`]) {
        const res = await get(`/api/v1/status/${encodeURIComponent(address)}`, guarded.app);
        expect(res.statusCode, address).toBe(400);
        expect(res.json().error, address).toBe('target_refused');
      }
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
      await guarded.app.close();
    }
  });

  it('a silent server is online false within PING_TIMEOUT_MS while health stays responsive', async () => {
    const slow = await appWith({ PING_TIMEOUT_MS: '1500' });
    const silent = await startSilentServer();
    try {
      const pending = get(`/api/v1/status/127.0.0.1:${silent.port}`, slow.app);
      let settled = false;
      void pending.then(() => (settled = true));
      await new Promise((r) => setTimeout(r, 200));
      const health = await get('/api/v1/status', slow.app);
      expect(health.statusCode).toBe(200);
      expect(settled).toBe(false);
      const res = await pending;
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ online: false, error: 'timed out' });
      // The client destroyed its socket: the server side sees it close.
      for (let i = 0; i < 100 && silent.open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(silent.open()).toBe(0);
    } finally {
      await silent.close();
      await slow.app.close();
    }
  });
});

describe('coalescing and rate limits', () => {
  it('200 concurrent requests for one cold target open exactly one connection', async () => {
    const server = await startJavaServer({ motd: 'busy' });
    const roomy = await appWith({ RATE_LIMIT_STATUS: '1000' });
    try {
      const responses = await Promise.all(
        Array.from({ length: 200 }, () => get(`/api/v1/status/127.0.0.1:${server.port}`, roomy.app)),
      );
      expect(responses.every((r) => r.statusCode === 200 && r.json().online === true)).toBe(true);
      expect(new Set(responses.map((r) => r.json().checked_at)).size).toBe(1);
      expect(server.connections()).toBe(1);
    } finally {
      await server.close();
      await roomy.app.close();
    }
  });

  it('the 121st status request in a minute is a 429 with Retry-After and RateLimit headers', async () => {
    const limited = await appWith();
    try {
      const url = `/api/v1/status/127.0.0.1:${java.port}`;
      for (let i = 0; i < 120; i++) {
        const res = await limited.app.inject({ method: 'GET', url, remoteAddress: '198.51.100.20' });
        expect(res.statusCode).toBe(200);
      }
      const res = await limited.app.inject({ method: 'GET', url, remoteAddress: '198.51.100.20' });
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.headers['ratelimit-policy']).toBe('"status";q=120;w=60');
      expect(res.headers['ratelimit']).toMatch(/^"status";r=0;t=\d+$/);
      expect(res.json()).toMatchObject({ status: 'error', error: 'rate_limited' });
      // Health is not counted against anyone.
      expect((await limited.app.inject({ method: 'GET', url: '/api/v1/status', remoteAddress: '198.51.100.20' })).statusCode).toBe(200);
    } finally {
      await limited.app.close();
    }
  });
});

