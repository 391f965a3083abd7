/**
 * `?query=true`, POST /status/bulk and `blocked` through the HTTP API, against the real Java and
 * Bedrock fixture servers plus a Query responder serving real servers' reply bytes on the same
 * port number (UDP beside TCP, as a server with `enable-query=true` does).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import net, { type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { buildApp } from '../../src/http/app.js';
import { SharedRedis } from '../../src/redis/shared-redis.js';
import { systemClock } from '../../src/core/clock.js';
import { Blocklist, createStatusService, withBlockedFlag } from '../../src/status/index.js';
import { fixture } from '../protocol/fixtures.js';
import { startQueryResponder, VANILLA_1_8_RESULT, type QueryResponder } from '../protocol/query-responder.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { freeUdpPort } from '../../scripts/ports.mjs';
import { openApiValidator } from '../support/openapi.js';
import { REDIS_URL } from '../support/services.js';

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

async function appWith(env: Record<string, string> = {}, blocklist: Blocklist | null = null) {
  const config = testConfig(env);
  const service = createStatusService({ config, clock: systemClock, icmp: null });
  const app = await buildApp({ config, status: withBlockedFlag(service, blocklist), logger: false });
  await app.ready();
  return app;
}

let app: Awaited<ReturnType<typeof appWith>>;
let java: RunningJavaServer;
let plainJava: RunningJavaServer;
let bedrock: RunningBedrockServer;
let query: QueryResponder;
let bedrockQuery: QueryResponder;
let validate: Awaited<ReturnType<typeof openApiValidator>>;
let blocklist: Blocklist;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'observer-blocklist-'));
  const listFile = join(dir, 'blockedservers.txt');
  // 127.0.0.* blocks every loopback literal; `*.blocked.any.observer.test` a whole domain.
  writeFileSync(listFile, `${sha1('127.0.0.*')}\n${sha1('*.blocked.any.observer.test')}\n`);
  blocklist = new Blocklist({ source: { kind: 'file', path: listFile }, refreshMinutes: 60 });
  expect(await blocklist.load()).toBe(true);
  app = await appWith({ RATE_LIMIT_STATUS: '1000' }, blocklist);
  validate = await openApiValidator(app);
  java = await startJavaServer({ motd: 'Query me', onlinePlayers: 3 });
  plainJava = await startJavaServer({ motd: 'No query here' });
  query = await startQueryResponder({ body: fixture('query-vanilla-1.8.hex'), port: java.port });
  const udp = await freeUdpPort();
  bedrock = await startBedrockServer({ port: udp });
  bedrockQuery = await startQueryResponder({ body: fixture('query-pocketmine.hex') });
});
afterAll(async () => {
  await app.close();
  await java.close();
  await plainJava.close();
  await bedrock.close();
  await query.close();
  await bedrockQuery.close();
});

const get = (url: string, target = app) => target.inject({ method: 'GET', url });
const bulk = (payload: unknown, target = app) =>
  target.inject({ method: 'POST', url: '/api/v1/status/bulk', payload: payload as object });

describe('GET /status/{address}?query=true', () => {
  it('adds queryResult from the Query beside the ping; the status fields stay the ping’s', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${java.port}?query=true`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(validate('ServerStatus', body)).toEqual([]);
    expect(body.online).toBe(true);
    expect(body.players.online).toBe(3);
    expect(body.motd.clean).toBe('Query me');
    expect(body.query).toEqual({ host: '127.0.0.1', port: java.port, legacy: false, bedrock: false });
    expect(body.queryResult).toEqual(VANILLA_1_8_RESULT);
  });

  it('sends no UDP packet and has no queryResult without query=true; the flag is part of the cache key', async () => {
    const target = await startJavaServer();
    const responder = await startQueryResponder({ body: fixture('query-vanilla-1.8.hex'), port: target.port });
    try {
      const plain = await get(`/api/v1/status/127.0.0.1:${target.port}`);
      expect(plain.json().online).toBe(true);
      expect(plain.json()).not.toHaveProperty('queryResult');
      expect(responder.received).toBe(0);
      const queried = await get(`/api/v1/status/127.0.0.1:${target.port}?query=true`);
      expect(queried.headers['x-cache']).toBe('MISS');
      expect(queried.json().queryResult.players).toHaveLength(3);
      expect((await get(`/api/v1/status/127.0.0.1:${target.port}?query=true`)).headers['x-cache']).toBe('HIT');
      expect((await get(`/api/v1/status/127.0.0.1:${target.port}`)).json()).not.toHaveProperty('queryResult');
      expect(responder.answered).toBe(1);
    } finally {
      await responder.close();
      await target.close();
    }
  });

  it('a server with query disabled: queryResult.error, still online', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${plainJava.port}?query=true`);
    const body = res.json();
    expect(validate('ServerStatus', body)).toEqual([]);
    expect(body.online).toBe(true);
    expect(body.queryResult).toEqual({ error: 'connection refused', error_code: 'connection_refused' });
  });

  it('a query port that drops packets: queryResult "timed out" soon after the ping, not at the end of the budget', async () => {
    // A 60 s budget: without the grace after the ping, this answer would outlive the test's 30 s.
    const patient = await appWith({ PING_TIMEOUT_MS: '60000' });
    const target = await startJavaServer();
    const silent = await startQueryResponder({ body: fixture('query-vanilla-1.8.hex'), port: target.port, behaviour: 'silent' });
    try {
      const body = (await get(`/api/v1/status/127.0.0.1:${target.port}?query=true`, patient)).json();
      expect(body.online).toBe(true);
      expect(body.queryResult).toEqual({ error: 'timed out', error_code: 'timeout' });
      expect(silent.received).toBeGreaterThanOrEqual(1);
    } finally {
      await patient.close();
      await silent.close();
      await target.close();
    }
  }, 30_000);

  it('queryPort sends the Query to another port; on Bedrock too', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${bedrock.port}?bedrock=true&query=true&queryPort=${bedrockQuery.port}`);
    const body = res.json();
    expect(validate('ServerStatus', body)).toEqual([]);
    expect(body.online).toBe(true);
    expect(body.queryResult).toMatchObject({ gameId: 'MINECRAFTPE', players: ['Alex', 'Steve'] });
    expect(body).not.toHaveProperty('blocked');
  });

  it('queryPort out of range: 400', async () => {
    const res = await get(`/api/v1/status/127.0.0.1:${java.port}?query=true&queryPort=70000`);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_parameter');
  });
});

describe('blocked', () => {
  it('is true for an IPv4 matching a.b.c.* and for a name under a blocked domain', async () => {
    const body = (await get(`/api/v1/status/127.0.0.1:${plainJava.port}`)).json();
    expect(body.blocked).toBe(true);
    expect(validate('ServerStatus', body)).toEqual([]);
    const named = (await get(`/api/v1/status/mc.blocked.any.observer.test:${plainJava.port}`)).json();
    expect(named.blocked).toBe(true);
  });

  it('checks the IP in Java\'s text form: an IPv6 server is matched as 0:0:0:0:0:0:0:1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'observer-blocklist-'));
    writeFileSync(join(dir, 'list'), `${sha1('0:0:0:0:0:0:0:1')}\n`);
    const list = new Blocklist({ source: { kind: 'file', path: join(dir, 'list') }, refreshMinutes: 60 });
    expect(await list.load()).toBe(true);
    const v6 = await startJavaServer({ host: '::1' });
    const listed = await appWith({}, list);
    try {
      const body = (await get(`/api/v1/status/v6.observer.test:${v6.port}`, listed)).json();
      expect(body).toMatchObject({ online: true, ip_address: '::1', blocked: true });
    } finally {
      await listed.close();
      await v6.close();
    }
  });

  it('is null while no list is loaded, false when loaded and not listed', async () => {
    const none = await appWith({}, null);
    const empty = new Blocklist({ source: { kind: 'file', path: '/nonexistent/observer-list' }, refreshMinutes: 60 });
    expect(await empty.load()).toBe(false);
    const notLoaded = await appWith({}, empty);
    try {
      expect((await get(`/api/v1/status/127.0.0.1:${plainJava.port}`, none)).json().blocked).toBeNull();
      expect((await get(`/api/v1/status/127.0.0.1:${plainJava.port}`, notLoaded)).json().blocked).toBeNull();
      const dir = mkdtempSync(join(tmpdir(), 'observer-blocklist-'));
      writeFileSync(join(dir, 'list'), `${sha1('*.elsewhere.test')}\n`);
      const other = new Blocklist({ source: { kind: 'file', path: join(dir, 'list') }, refreshMinutes: 60 });
      await other.load();
      const loaded = await appWith({}, other);
      expect((await get(`/api/v1/status/127.0.0.1:${plainJava.port}`, loaded)).json().blocked).toBe(false);
      await loaded.close();
    } finally {
      await none.close();
      await notLoaded.close();
    }
  });
});

describe('POST /status/bulk', () => {
  it('answers every entry in order: statuses and error objects with the single endpoint’s codes', async () => {
    const res = await bulk({
      servers: [
        { address: `127.0.0.1:${java.port}`, query: true },
        { address: 'not a host!' },
        { address: `127.0.0.1:${bedrock.port}`, bedrock: true },
        { address: 'nx-bulk.observer.test' },
        { address: `127.0.0.1:${java.port}`, legacy: true, bedrock: true },
        { address: `127.0.0.1:${plainJava.port}` },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(validate('BulkResponse', body)).toEqual([]);
    const r = body.results;
    expect(r).toHaveLength(6);
    expect(r[0]).toMatchObject({ online: true, queryResult: { software: '1.8' } });
    expect(r[1]).toEqual({ address: 'not a host!', error: 'invalid_address', message: expect.any(String) });
    expect(r[2]).toMatchObject({ online: true, query: { bedrock: true, port: bedrock.port } });
    expect(r[3]).toMatchObject({ address: 'nx-bulk.observer.test', error: 'host_not_found' });
    expect(r[4]).toMatchObject({ error: 'invalid_query' });
    expect(r[5]).toMatchObject({ online: true, motd: { clean: 'No query here' }, blocked: true });
  });

  it('shares the cache with the single endpoint: a cached entry costs no new ping', async () => {
    const target = await startJavaServer();
    try {
      await get(`/api/v1/status/127.0.0.1:${target.port}`);
      const before = target.connections();
      const res = await bulk({ servers: Array.from({ length: 50 }, () => ({ address: `127.0.0.1:${target.port}` })) });
      expect(res.statusCode).toBe(200);
      expect(res.json().results).toHaveLength(50);
      expect(target.connections()).toBe(before);
    } finally {
      await target.close();
    }
  });

  it('has at most 8 pings in flight: 20 cold entries against a server that holds every connection', async () => {
    // Holds each connection without answering, and counts how many are open at once. Once no
    // new connection has come for a while, it drops the ones it holds (each of those pings then
    // fails), so the next entries can start: with no cap, all 20 would be held together.
    const held = new Set<Socket>();
    let accepted = 0;
    let most = 0;
    let quiet: NodeJS.Timeout | undefined;
    const holder = net.createServer((socket) => {
      accepted += 1;
      held.add(socket);
      most = Math.max(most, held.size);
      socket.resume();
      socket.on('error', () => {});
      socket.on('close', () => held.delete(socket));
      clearTimeout(quiet);
      quiet = setTimeout(() => {
        for (const s of held) s.destroy();
      }, 100);
    });
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const run = randomUUID().slice(0, 8);
      const servers = Array.from({ length: 20 }, (_, i) => ({ address: `bulk-${run}-${i}.any.observer.test:${port}` }));
      const res = await bulk({ servers });
      expect(res.statusCode).toBe(200);
      const results = res.json().results as Array<{ online: boolean }>;
      expect(results).toHaveLength(20);
      expect(results.every((s) => s.online === false)).toBe(true);
      expect(accepted).toBe(20);
      // Never more than 8 at once, and more than one: the entries do run in parallel.
      expect(most).toBeLessThanOrEqual(8);
      expect(most).toBeGreaterThan(1);
    } finally {
      clearTimeout(quiet);
      for (const s of held) s.destroy();
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it('documents its answers in the OpenAPI document, 415 included', async () => {
    const doc = (await get('/api/v1/openapi.json')).json();
    const responses = doc.paths['/status/bulk'].post.responses;
    expect(Object.keys(responses).sort()).toEqual(['200', '400', '408', '413', '415', '429', '431', '500', '503']);
    expect(JSON.stringify(responses['415'])).toContain('ErrorResponse');
  });

  it('coalesces duplicate cold entries into one ping', async () => {
    const target = await startJavaServer();
    try {
      const res = await bulk({ servers: Array.from({ length: 20 }, () => ({ address: `127.0.0.1:${target.port}` })) });
      expect(res.json().results.every((s: { online: boolean }) => s.online)).toBe(true);
      expect(target.connections()).toBe(1);
    } finally {
      await target.close();
    }
  });

  it('400 for more than 50 entries, none, or a malformed body', async () => {
    const tooMany = await bulk({ servers: Array.from({ length: 51 }, () => ({ address: 'a.example' })) });
    expect(tooMany.statusCode).toBe(400);
    expect(validate('ErrorResponse', tooMany.json())).toEqual([]);
    expect((await bulk({ servers: [] })).statusCode).toBe(400);
    expect((await bulk({ servers: [{ host: 'x' }] })).statusCode).toBe(400);
    const bad = await app.inject({
      method: 'POST',
      url: '/api/v1/status/bulk',
      headers: { 'content-type': 'application/json' },
      payload: '{"servers": [',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ status: 'error', error: 'invalid_body', message: 'The request body is not valid JSON.' });
    const text = await app.inject({ method: 'POST', url: '/api/v1/status/bulk', headers: { 'content-type': 'application/xml' }, payload: '<servers/>' });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toMatchObject({ status: 'error', error: 'unsupported_media_type' });
  });

  it('413 body_too_large for a body over 16 KiB', async () => {
    const res = await bulk({ servers: [{ address: 'x'.repeat(200) }], padding: 'y'.repeat(17 * 1024) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ status: 'error', error: 'body_too_large' });
    expect(res.json().message).toMatch(/larger than this route accepts/);
  });

  it('counts one unit per entry; a request that would exceed the limit is a 429 before any ping', async () => {
    const limited = await appWith({ RATE_LIMIT_STATUS: '10' });
    const target = await startJavaServer();
    try {
      const servers = (n: number) => Array.from({ length: n }, (_, i) => ({ address: `127.0.0.1:${target.port}`, legacy: i % 2 === 1 }));
      const first = await bulk({ servers: servers(8) }, limited);
      expect(first.statusCode).toBe(200);
      expect(first.headers.ratelimit).toBe('"status";r=2;t=60');
      const pingsBefore = target.connections();
      const second = await bulk({ servers: [{ address: `127.0.0.1:${target.port}`, query: true }, ...servers(2)] }, limited);
      expect(second.statusCode).toBe(429);
      expect(second.json().error).toBe('rate_limited');
      expect(second.headers['retry-after']).toBeDefined();
      expect(target.connections()).toBe(pingsBefore);
    } finally {
      await limited.close();
      await target.close();
    }
  });
});

describe('bulk units with Redis-backed limits', () => {
  it('counts one unit per entry in the shared window too', async () => {
    const redis = new SharedRedis(REDIS_URL);
    expect(await redis.ready(5_000)).toBe(true);
    const config = testConfig({ RATE_LIMIT_STATUS: '10' });
    const shared = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), redis, logger: false });
    await shared.ready();
    const target = await startJavaServer();
    try {
      const servers = (n: number) => Array.from({ length: n }, () => ({ address: `127.0.0.1:${target.port}` }));
      const first = await bulk({ servers: servers(8) }, shared);
      expect(first.statusCode).toBe(200);
      expect(first.headers.ratelimit).toMatch(/^"status";r=2;t=\d+$/);
      const pings = target.connections();
      expect((await bulk({ servers: servers(3) }, shared)).statusCode).toBe(429);
      expect(target.connections()).toBe(pings);
    } finally {
      await shared.close();
      await target.close();
      await redis.close();
    }
  });
});

describe('composeApp wiring', () => {
  it('loads BLOCKLIST_SOURCE once started and stops its background work on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'observer-compose-'));
    writeFileSync(join(dir, 'list'), `${sha1('127.0.0.*')}\n`);
    const composed = await composeApp(
      testConfig({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, BLOCKLIST_SOURCE: join(dir, 'list'), ICMP: 'off' }),
      { logger: false },
    );
    try {
      const url = `/api/v1/status/127.0.0.1:${plainJava.port}`;
      expect((await get(url, composed.app)).json().blocked).toBeNull();
      await composed.startBackground();
      expect(composed.blocklist?.size).toBe(1);
      const body = (await get(`${url}?query=true`, composed.app)).json();
      expect(body.blocked).toBe(true);
      expect(body.queryResult).toEqual({ error: 'connection refused', error_code: 'connection_refused' });
    } finally {
      await composed.app.close();
    }
  });

  it('closing the app waits for the background refresh in flight, and no ping starts after', async () => {
    // A loopback server that first drops connections at once (the user's look-up: offline),
    // then holds them until the test lets go (the refresher's ping in flight).
    let hold = false;
    let accepted = 0;
    const held = new Set<Socket>();
    const slow = net.createServer((socket) => {
      accepted += 1;
      socket.on('error', () => {});
      if (!hold) return void socket.destroy();
      held.add(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const port = (slow.address() as AddressInfo).port;
    const dir = mkdtempSync(join(tmpdir(), 'observer-compose-'));
    const clock = new FakeClock();
    const composed = await composeApp(
      testConfig({
        DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
        ICMP: 'off',
        STATUS_CACHE_TTL: '1',
        PING_TIMEOUT_MS: '30000',
        REFRESH_PINGS_PER_MINUTE: '6000',
      }),
      { logger: false, clock },
    );
    let closed = false;
    try {
      expect((await get(`/api/v1/status/127.0.0.1:${port}`, composed.app)).json().online).toBe(false);
      expect(accepted).toBe(1);
      hold = true;
      clock.advance(2_000);
      await composed.startBackground();
      for (let i = 0; i < 500 && held.size === 0; i += 1) await new Promise((r) => setTimeout(r, 10));
      expect(held.size).toBe(1);

      const closing = composed.app.close().then(() => (closed = true));
      // The refresh's ping is held (its budget is 30 s): close must still be waiting for it.
      for (let i = 0; i < 10; i += 1) await new Promise((r) => setTimeout(r, 10));
      expect(closed).toBe(false);
      expect(composed.refresher.refreshed).toBe(0);
      for (const socket of held) socket.destroy();
      await closing;
      expect(composed.refresher.refreshed).toBe(1);

      // Stopped: due again, but no ping starts.
      clock.advance(10_000);
      for (let i = 0; i < 10; i += 1) await new Promise((r) => setTimeout(r, 10));
      expect(accepted).toBe(2);
    } finally {
      hold = false;
      for (const socket of held) socket.destroy();
      if (!closed) await composed.app.close();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });
});

describe('OpenAPI document', () => {
  it('covers the bulk route, the query parameters and the new fields', async () => {
    const doc = (await get('/api/v1/openapi.json')).json();
    const bulkOp = doc.paths['/status/bulk'].post;
    expect(Object.keys(bulkOp.responses)).toEqual(expect.arrayContaining(['200', '400', '413', '429']));
    expect(bulkOp.requestBody).toBeDefined();
    const params = doc.paths['/status/{address}'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(['query', 'queryPort']));
    const fields = doc.components.schemas.ServerStatus.properties;
    expect(fields).toHaveProperty('blocked');
    expect(fields).toHaveProperty('queryResult');
    expect(doc.components.schemas).toHaveProperty('QueryResult');
    expect(doc.components.schemas).toHaveProperty('BulkError');
  });
});
