/**
 * HTTP limits over real sockets: bodies, the head timeout, connections per client, and the
 * general tier on 404s and 405s, and preflights answered whatever the limits.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { systemClock } from '../../src/core/clock.js';
import { createStatusService } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';

const apps: Array<Awaited<ReturnType<typeof buildApp>>> = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const app of apps.splice(0)) await app.close();
});

async function listening(env: Record<string, string> = {}) {
  const config = testConfig(env);
  const app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  apps.push(app);
  return { app, port: (app.server.address() as { port: number }).port };
}

/** A raw connection; resolves with everything the server sent once it closes the connection. */
function rawConnection(port: number, localAddress = '127.0.0.1') {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  sockets.push(socket);
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString('latin1')));
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.on('error', () => {});
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed, connected, received: () => received };
}

describe('request bodies', () => {
  it('refuses a body on a route that takes none with 413, on the fast status path too', async () => {
    const { app, port } = await listening();
    const health = await app.inject({ method: 'GET', url: '/api/v1/status', payload: 'x'.repeat(10) });
    expect(health.statusCode).toBe(413);
    expect(health.json()).toMatchObject({ status: 'error', error: 'body_not_allowed' });

    const raw = rawConnection(port);
    await raw.connected;
    raw.socket.write('GET /api/v1/status/127.0.0.1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello');
    const answer = await raw.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('"error":"body_not_allowed"');
  });

  it('takes a bulk body up to HTTP_BODY_LIMIT_BYTES and refuses one byte more with 413 before parsing', async () => {
    const { app } = await listening({ HTTP_BODY_LIMIT_BYTES: '1024' });
    const body = (bytes: number) => {
      const base = JSON.stringify({ servers: ['127.0.0.1:1'], pad: '' });
      return JSON.stringify({ servers: ['127.0.0.1:1'], pad: 'x'.repeat(bytes - base.length) });
    };
    const post = (payload: string) =>
      app.inject({ method: 'POST', url: '/api/v1/status/bulk', headers: { 'content-type': 'application/json' }, payload });
    const atLimit = await post(body(1024));
    expect(atLimit.statusCode).not.toBe(413);
    const over = await post(body(1025));
    expect(over.statusCode).toBe(413);
    expect(over.json()).toMatchObject({ status: 'error', error: 'body_too_large' });
  });
});

describe('timeouts', () => {
  it('closes a connection that trickles its request head past HTTP_HEADERS_TIMEOUT_MS', async () => {
    const { port } = await listening({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '1000' });
    const raw = rawConnection(port);
    await raw.connected;
    raw.socket.write('GET /api/v1/status HTTP/1.1\r\nHost: x\r\n');
    // One header byte every 100 ms, for far longer than the timeout, unless the server hangs up.
    let sent = 0;
    let open = true;
    void raw.closed.then(() => (open = false));
    while (open && sent < 300) {
      raw.socket.write('X');
      sent += 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(open).toBe(false);
    expect(sent).toBeLessThan(300);
    expect(raw.received()).not.toContain('"status":"OK"');
  });
});

describe('connections per client', () => {
  it('closes connections past MAX_CONNECTIONS_PER_CLIENT from one address, and serves another address', async () => {
    const { port } = await listening({ MAX_CONNECTIONS_PER_CLIENT: '3' });
    const held = Array.from({ length: 3 }, () => rawConnection(port));
    await Promise.all(held.map((c) => c.connected));
    // Accepted ones stay open: each still answers a request.
    const extra = rawConnection(port);
    expect(await extra.closed).toBe('');
    const other = rawConnection(port, '127.0.0.2');
    await other.connected;
    other.socket.end('GET /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await other.closed).toMatch(/^HTTP\/1\.1 200 /);
    held[0]!.socket.end('GET /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await held[0]!.closed).toMatch(/^HTTP\/1\.1 200 /);
    // Once one closed, the address may open another.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const again = rawConnection(port);
    await again.connected;
    again.socket.end('GET /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await again.closed).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('unknown paths and wrong methods draw on the general tier; preflights on none', () => {
  it.each([
    ['GET', '/no/such/path', 404],
    ['PUT', '/api/v1/status/example.com', 405],
  ])('%s %s: 429 once the general limit is spent', async (method, url, status) => {
    const { app } = await listening({ RATE_LIMIT_GENERAL: '2' });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await app.inject({ method: method as 'GET', url, headers: { origin: 'https://a.example' } })).statusCode);
    expect(codes).toEqual([status, status, 429]);
  });

  it('answers a preflight as CORS requires once every limit is spent, so the browser can read the 429 that follows', async () => {
    const { app } = await listening({ RATE_LIMIT_GENERAL: '1', RATE_LIMIT_STATUS: '1' });
    const origin = { origin: 'https://a.example' };
    await app.inject({ url: '/no/such/path', headers: origin });
    expect((await app.inject({ url: '/no/such/path', headers: origin })).statusCode).toBe(429);
    const preflight = { 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type', ...origin };
    for (const url of ['/api/v1/status/bulk', '/api/v1/trends', '/no/such/path']) {
      const res = await app.inject({ method: 'OPTIONS', url, headers: preflight });
      expect(res.statusCode, url).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-methods']).toContain('POST');
      expect(res.headers['access-control-allow-headers']).toBe('content-type');
    }
    const refused = await app.inject({ url: '/api/v1/trends', headers: origin });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['access-control-allow-origin']).toBe('*');
    expect(String(refused.headers['access-control-expose-headers'])).toContain('Retry-After');
  });
});
