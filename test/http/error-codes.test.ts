/**
 * `error_code` beside `error`: each code against a fixture that causes it (real servers and
 * closed ports on loopback, the test zone's DNS records, hostile servers for bad replies).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type net from 'node:net';
import { buildApp } from '../../src/http/app.js';
import { createStatusService, MemoryStatusCache, StatusService } from '../../src/status/index.js';
import { decodeEntry } from '../../src/status/redis-cache.js';
import { pingBedrock, pingJava } from '../../src/protocol/index.js';
import { AddressGuard, TargetResolver } from '../../src/resolve/index.js';
import { ERROR_MESSAGES } from '../../src/core/errors.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';
import { startSilentServer } from '../support/hostile.js';
import { freePort, freeUdpPort } from '../../scripts/ports.mjs';
import { startJavaServer } from '../support/minecraft.js';
import { openApiValidator } from '../support/openapi.js';
import { startHostileTcp } from '../protocol/hostile.js';

async function appWith(env: Record<string, string> = {}, status?: StatusService) {
  const config = testConfig({ PING_TIMEOUT_MS: '500', ...env });
  const app = await buildApp({ config, status: status ?? createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.ready();
  return app;
}

type App = Awaited<ReturnType<typeof appWith>>;
let app: App;
let validate: Awaited<ReturnType<typeof openApiValidator>>;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  app = await appWith();
  validate = await openApiValidator(app);
});
afterAll(async () => {
  await app.close();
  for (const close of closers) await close();
});

async function statusOf(address: string, on: App = app) {
  const res = await on.inject({ method: 'GET', url: `/api/v1/status/${address}` });
  expect(res.statusCode).toBe(200);
  const body = res.json();
  expect(validate('ServerStatus', body)).toEqual([]);
  return body;
}

/** A TCP server that answers the client's first bytes with `reply` (or ends at once without one). */
async function hostile(reply: string | null): Promise<number> {
  const server = await startHostileTcp((socket: net.Socket) => {
    if (reply === null) socket.end();
    else socket.once('data', () => socket.write(Buffer.from(reply, 'hex')));
  });
  closers.push(() => server.close());
  return server.port;
}

describe('error_code of an offline status', () => {
  it('is null when the server answers', async () => {
    const server = await startJavaServer();
    closers.push(() => server.close());
    const body = await statusOf(`127.0.0.1:${server.port}`);
    expect(body).toMatchObject({ online: true, error: null, error_code: null });
  });

  it.each([
    ['connection_refused', 'a closed loopback port', async (): Promise<string> => `127.0.0.1:${await freePort()}`],
    [
      'timeout',
      'a server that accepts and never answers',
      async (): Promise<string> => {
        const silent = await startSilentServer();
        closers.push(() => silent.close());
        return `127.0.0.1:${silent.port}`;
      },
    ],
    ['connection_closed', 'a server that closes before any reply', async (): Promise<string> => `127.0.0.1:${await hostile(null)}`],
    ['invalid_response', 'a 6-byte VarInt', async (): Promise<string> => `127.0.0.1:${await hostile('ffffffffff01')}`],
    ['response_too_large', 'a 2 GiB length prefix', async (): Promise<string> => `127.0.0.1:${await hostile('ffffffff0700')}`],
    ['dns_not_found', 'an SRV record whose target has no address', async (): Promise<string> => 'srvdangling.observer.test'],
    ['srv_invalid', 'an SRV record with target "."', async (): Promise<string> => 'srvnone.observer.test'],
  ] as const)('%s: %s', async (code, _fixture, target) => {
    const body = await statusOf(await target());
    expect(body).toMatchObject({ online: false, error: ERROR_MESSAGES[code], error_code: code });
  });

  it('dns_failure: the DNS server does not answer (nothing listens on its port)', async () => {
    const deaf = await appWith({ DNS_SERVERS: `127.0.0.1:${await freeUdpPort()}` });
    try {
      const body = await statusOf('mc.observer.test:25565', deaf);
      expect(body).toMatchObject({ online: false, error: 'DNS lookup failed', error_code: 'dns_failure' });
    } finally {
      await deaf.close();
    }
  });

  it('internal_error: a client failing with something other than a probe failure; its text stays out', async () => {
    const config = testConfig();
    const service = new StatusService({
      resolver: new TargetResolver({ dnsServers: config.dnsServers, guard: new AddressGuard(config.targetAllowlist) }),
      ping: {
        java: pingJava,
        bedrock: pingBedrock,
        legacy: () => Promise.reject(new TypeError('secret internal detail')),
      },
      cache: new MemoryStatusCache(),
      clock: systemClock,
      ttlSeconds: 60,
      pingTimeoutMs: 500,
      maxConcurrentPings: 10,
    });
    const custom = await appWith({}, service);
    try {
      const body = await statusOf('127.0.0.1:25565?legacy=true', custom);
      expect(body).toMatchObject({ online: false, error: 'query failed', error_code: 'internal_error' });
      expect(JSON.stringify(body)).not.toContain('secret');
      // Without a Query client, a Query is `query_unavailable`, and the status stays as the ping found it.
      const server = await startJavaServer();
      closers.push(() => server.close());
      const queried = await statusOf(`127.0.0.1:${server.port}?query=true`, custom);
      expect(queried.online).toBe(true);
      expect(queried.queryResult).toEqual({ error: 'query not available', error_code: 'query_unavailable' });
    } finally {
      await custom.close();
    }
  });

  it('a cached failure keeps its code (HIT), and so does the bulk route', async () => {
    const port = await freePort();
    const first = await statusOf(`127.0.0.1:${port}`);
    const res = await app.inject({ method: 'GET', url: `/api/v1/status/127.0.0.1:${port}` });
    expect(res.headers['x-cache']).toBe('HIT');
    expect(res.json().error_code).toBe('connection_refused');
    expect(first.error_code).toBe('connection_refused');
    const bulk = await app.inject({ method: 'POST', url: '/api/v1/status/bulk', payload: { servers: [{ address: `127.0.0.1:${port}` }] } });
    expect(bulk.json().results[0]).toMatchObject({ online: false, error_code: 'connection_refused' });
  });

  it('a Redis entry written without error_code is read with the code its error sentence stands for', () => {
    const status = (online: boolean, error: string | null) => ({ status: { online, error, checked_at: '' }, checkedAt: 1 });
    const entry = decodeEntry(JSON.stringify({ latest: status(false, 'connection refused'), lastSuccess: status(true, null) }));
    expect(entry?.latest.status.error_code).toBe('connection_refused');
    expect(entry?.lastSuccess?.status.error_code).toBeNull();
    expect(decodeEntry(JSON.stringify({ latest: status(false, 'something new'), lastSuccess: null }))?.latest.status.error_code).toBe(
      'internal_error',
    );
  });

  it('the OpenAPI document lists every code', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    // One string constant per code (@fastify/swagger writes each `const` as a one-value `enum`).
    const values = (schema: { anyOf: Array<{ const?: string; enum?: string[] }> }) => schema.anyOf.map((value) => value.const ?? value.enum?.[0]);
    expect(values(doc.components.schemas.ErrorCode)).toEqual(Object.keys(ERROR_MESSAGES));
    expect(values(doc.components.schemas.QueryErrorCode)).toContain('query_unavailable');
  });
});
