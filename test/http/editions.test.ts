/**
 * `edition=auto` (docs/lookups.md, "Both editions in one look-up"): a minecraft-protocol Java server
 * (TCP) and a bedrock-protocol server (UDP) on the same port of mc.observer.test, both on their
 * default ports of one name, then only one of them, then neither. The same cache entries as the plain requests, one unit of the status
 * budget, and the bulk route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';
import { freePort, freeUdpPort } from '../../scripts/ports.mjs';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { openApiValidator } from '../support/openapi.js';
import { startPrivateDns } from '../support/dns.js';

async function appWith(env: Record<string, string> = {}) {
  const config = testConfig({ PING_TIMEOUT_MS: '1500', ...env });
  const app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.ready();
  return app;
}

type App = Awaited<ReturnType<typeof appWith>>;
let app: App;
let validate: Awaited<ReturnType<typeof openApiValidator>>;
/** Both editions on port `port`: Java over TCP, Bedrock over UDP. */
let java: RunningJavaServer;
let bedrock: RunningBedrockServer;
let port: number;

beforeAll(async () => {
  app = await appWith();
  validate = await openApiValidator(app);
  java = await startJavaServer({ motd: 'Java side', onlinePlayers: 2 });
  port = java.port;
  bedrock = await startBedrockServer({ port, motd: 'Bedrock side', playersOnline: 5 });
});
afterAll(async () => {
  await app.close();
  await java.close();
  await bedrock.close();
});

async function get(url: string, on: App = app) {
  return on.inject({ method: 'GET', url: `/api/v1/status/${url}` });
}

async function auto(address: string, on: App = app) {
  const res = await get(`${address}?edition=auto`, on);
  expect(res.statusCode).toBe(200);
  const body = res.json();
  expect(validate('EditionsStatus', body)).toEqual([]);
  return { body, cache: res.headers['x-cache'] };
}

describe('edition=auto', () => {
  it('a server speaking both editions: both statuses, from the cache entries the plain requests use', async () => {
    const { body, cache } = await auto(`mc.observer.test:${port}`);
    expect(cache).toBe('MISS');
    expect(body).toMatchObject({
      query: { host: 'mc.observer.test', port, edition: 'auto' },
      online: true,
      editions: ['java', 'bedrock'],
      java: { online: true, query: { port, bedrock: false }, players: { online: 2 }, error_code: null },
      bedrock: { online: true, query: { port, bedrock: true }, players: { online: 5 }, error_code: null },
    });
    const plainJava = await get(`mc.observer.test:${port}`);
    expect(plainJava.headers['x-cache']).toBe('HIT');
    expect(plainJava.json()).toEqual(body.java);
    const plainBedrock = await get(`mc.observer.test:${port}?bedrock=true`);
    expect(plainBedrock.headers['x-cache']).toBe('HIT');
    expect(plainBedrock.json()).toEqual(body.bedrock);
    const again = await auto(`mc.observer.test:${port}`);
    expect(again.cache).toBe('HIT');
  });

  it('without a port, each edition its default: Java on TCP 25565, Bedrock on UDP 19132 of one name', async () => {
    // A loopback address of its own, so the default ports are free whatever else runs.
    const host = '127.0.0.41';
    const dns = await startPrivateDns(['local=/editions.test/', `host-record=both.editions.test,${host}`]);
    const javaDefault = await startJavaServer({ host, port: 25565, motd: 'default java' });
    const bedrockDefault = await startBedrockServer({ host, port: 19132, motd: 'default bedrock' });
    const named = await appWith({ DNS_SERVERS: dns.server });
    try {
      const { body } = await auto('both.editions.test', named);
      expect(body).toMatchObject({
        query: { host: 'both.editions.test', port: null },
        editions: ['java', 'bedrock'],
        java: { online: true, query: { port: 25565 }, ip_address: host },
        bedrock: { online: true, query: { port: 19132 }, ip_address: host },
      });
    } finally {
      await named.close();
      await javaDefault.close();
      await bedrockDefault.close();
      await dns.close();
    }
  });

  it('only Java answers', async () => {
    const alone = await startJavaServer({ motd: 'only java' });
    try {
      const { body } = await auto(`127.0.0.1:${alone.port}`);
      expect(body).toMatchObject({ online: true, editions: ['java'], java: { online: true }, bedrock: { online: false } });
      expect(body.bedrock.error_code).toEqual(expect.any(String));
    } finally {
      await alone.close();
    }
  });

  it('only Bedrock answers', async () => {
    const udp = await freeUdpPort();
    const alone = await startBedrockServer({ port: udp, motd: 'only bedrock' });
    try {
      const { body } = await auto(`127.0.0.1:${udp}`);
      expect(body).toMatchObject({ online: true, editions: ['bedrock'], java: { online: false }, bedrock: { online: true } });
    } finally {
      await alone.close();
    }
  });

  it('neither answers: online false, no edition, each with its error_code', async () => {
    const { body } = await auto(`127.0.0.1:${await freePort()}`);
    expect(body).toMatchObject({ online: false, editions: [], java: { online: false, error_code: 'connection_refused' }, bedrock: { online: false, error_code: 'connection_refused' } });
  });

  it('a name only Java finds (an SRV record alone): Bedrock is offline with dns_not_found; no record at all is the 404', async () => {
    const { body } = await auto('srv.observer.test');
    expect(body).toMatchObject({
      query: { host: 'srv.observer.test', port: null },
      java: { online: false, query: { port: 25599 }, srvRecord: { target: 'mc.observer.test' } },
      bedrock: { online: false, error: 'unknown host', error_code: 'dns_not_found', query: { port: 19132 } },
    });
    const missing = await get('missing.observer.test?edition=auto');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toBe('host_not_found');
  });

  it.each([
    ['edition=auto&bedrock=true', 'edition=auto'],
    ['edition=auto&legacy=true', 'edition=auto'],
    ['edition=java&bedrock=true', 'edition=java'],
    ['edition=bedrock&legacy=true', 'edition=bedrock'],
  ])('%s is a 400 invalid_query', async (query, named) => {
    const res = await get(`127.0.0.1:${port}?${query}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 'error', error: 'invalid_query' });
    expect(res.json().message).toContain(named);
  });

  it('edition=java and edition=bedrock answer the plain shapes; an unknown edition is a 400', async () => {
    expect((await get(`127.0.0.1:${port}?edition=java`)).json()).toMatchObject({ online: true, query: { bedrock: false, legacy: false } });
    expect((await get(`127.0.0.1:${port}?edition=java&legacy=true`)).json()).toMatchObject({ query: { legacy: true } });
    expect((await get(`127.0.0.1:${port}?edition=bedrock`)).json()).toMatchObject({ online: true, query: { bedrock: true } });
    expect((await get(`127.0.0.1:${port}?edition=both`)).statusCode).toBe(400);
  });

  it('counts as one unit of the status budget', async () => {
    const limited = await appWith({ RATE_LIMIT_STATUS: '2' });
    try {
      expect((await get(`127.0.0.1:${port}?edition=auto`, limited)).statusCode).toBe(200);
      expect((await get(`127.0.0.1:${port}?edition=auto`, limited)).statusCode).toBe(200);
      expect((await get(`127.0.0.1:${port}?edition=auto`, limited)).statusCode).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it('works in bulk, one unit per entry', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/status/bulk',
      payload: { servers: [{ address: `mc.observer.test:${port}`, edition: 'auto' }, { address: `127.0.0.1:${port}`, edition: 'auto', bedrock: true }] },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(validate('BulkResponse', body)).toEqual([]);
    expect(body.results[0]).toMatchObject({ online: true, editions: ['java', 'bedrock'] });
    expect(body.results[1]).toMatchObject({ error: 'invalid_query' });
  });
});
