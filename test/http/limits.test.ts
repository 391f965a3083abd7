/**
 * HTTP limits over real sockets: bodies, the head timeout, connections per client, and the
 * general tier on 404s and 405s, and preflights answered whatever the limits.
 */
import { request as httpRequest } from 'node:http';
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

/**
 * Writes a body of `bytes` spaces in 64 KiB pieces 10 ms apart (a client on a link slower than
 * loopback) while `open` says the connection is; the bytes it could write.
 */
async function writeSlowly(write: (chunk: Buffer) => unknown, open: () => boolean, bytes: number): Promise<number> {
  const piece = 64 * 1024;
  let sent = 0;
  while (sent < bytes && open()) {
    const chunk = Buffer.alloc(Math.min(piece, bytes - sent), 0x20);
    write(chunk);
    sent += chunk.length;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return sent;
}

/**
 * Node's own client sends a body of `bytes` bytes (writeSlowly): the answer, the bytes of the
 * body it could send before the connection closed, and every error it met on the way.
 */
function sendWithNodeClient(port: number, path: string, bytes: number, method = 'POST') {
  return new Promise<{ status: number; body: string; sent: number; errors: string[] }>((resolve) => {
    const answer = { status: 0, body: '', sent: 0, errors: [] as string[] };
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers: { 'content-type': 'application/json', 'content-length': bytes } }, (res) => {
      answer.status = res.statusCode ?? 0;
      res.on('data', (chunk: Buffer) => (answer.body += chunk.toString('utf8')));
    });
    req.on('error', (error: NodeJS.ErrnoException) => answer.errors.push(error.code ?? error.message));
    const written = writeSlowly((chunk) => req.write(chunk), () => !req.destroyed, bytes).then((sent) => {
      answer.sent = sent;
      req.end();
    });
    req.on('close', () => void written.then(() => resolve(answer)));
  });
}

describe('bodies refused unread', () => {
  const MiB = 1024 * 1024;

  it('reads and drops a 1 MiB body over the limit, so that Node\'s client and a raw socket send it whole and read their 413, then closes', async () => {
    const { port } = await listening();
    for (let i = 0; i < 3; i++) {
      const answer = await sendWithNodeClient(port, '/api/v1/status/bulk', MiB);
      expect(answer).toMatchObject({ status: 413, sent: MiB, errors: [] });
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'body_too_large' });
    }
    const raw = rawConnection(port);
    const errors: string[] = [];
    raw.socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
    await raw.connected;
    raw.socket.write(`POST /api/v1/status/bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${MiB}\r\n\r\n`);
    const sent = await writeSlowly((chunk) => raw.socket.write(chunk), () => raw.received() === '', MiB);
    const received = await raw.closed;
    expect(sent).toBe(MiB);
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received).toMatch(/\r\nconnection: close\r\n/i);
    expect(received).toContain('"error":"body_too_large"');
    expect(errors).toEqual([]);
  });

  it('answers a 1 MiB body where none is taken with 413 body_not_allowed, and on a wrong method with 405, read by Node\'s client', async () => {
    const { port } = await listening();
    const unwanted = await sendWithNodeClient(port, '/api/v1/status/127.0.0.1', MiB, 'GET');
    expect(unwanted).toMatchObject({ status: 413, sent: MiB, errors: [] });
    expect(JSON.parse(unwanted.body)).toMatchObject({ error: 'body_not_allowed' });
    const wrong = await sendWithNodeClient(port, '/api/v1/status/127.0.0.1', MiB, 'PUT');
    expect(wrong).toMatchObject({ status: 405, sent: MiB, errors: [] });
    expect(JSON.parse(wrong.body)).toMatchObject({ error: 'method_not_allowed' });
  });

  it('answers a client that announces a body and never sends it within a second, and closes', async () => {
    const { port } = await listening();
    const raw = rawConnection(port);
    await raw.connected;
    raw.socket.write('POST /api/v1/status/bulk HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nabc');
    const received = await raw.closed;
    expect(received).toMatch(/^HTTP\/1\.1 415 /);
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

describe('refused connections', () => {
  it('closes every one of 100 connections that trickle a head and never read, within HTTP_HEADERS_TIMEOUT_MS + 5 s', async () => {
    const headersTimeoutMs = 2000;
    const { app, port } = await listening({ HTTP_HEADERS_TIMEOUT_MS: String(headersTimeoutMs), MAX_CONNECTIONS_PER_CLIENT: '200' });
    // When the server accepted each connection, and when it closed it (its socket destroyed).
    const lifetimes: Array<{ accepted: number; closed?: number }> = [];
    app.server.on('connection', (socket: Socket) => {
      const lifetime: { accepted: number; closed?: number } = { accepted: performance.now() };
      lifetimes.push(lifetime);
      socket.once('close', () => (lifetime.closed = performance.now()));
    });
    const clients = Array.from({ length: 100 }, () => {
      // Half-open allowed and never read: the client neither answers the server's FIN nor reads the 408.
      const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      sockets.push(socket);
      socket.pause();
      socket.on('error', () => {});
      const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.write('GET /api/v1/status HTTP/1.1\r\nHost: x\r\n');
      return { socket, gone };
    });
    const deadline = headersTimeoutMs + 5000;
    const started = performance.now();
    // A header line every second from each, until the server has closed them all or the deadline is long past.
    while (lifetimes.filter((l) => l.closed !== undefined).length < 100 && performance.now() - started < 2 * deadline) {
      for (const [i, { socket }] of clients.entries()) if (!socket.destroyed) socket.write(`X-Line-${i}: ${'a'.repeat(20)}\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    expect(lifetimes).toHaveLength(100);
    const late = lifetimes.filter((l) => l.closed === undefined || l.closed - l.accepted > deadline);
    expect(late.map((l) => (l.closed === undefined ? 'open' : `closed after ${Math.round(l.closed - l.accepted)} ms`))).toEqual([]);
    // Each client finds its connection reset once it writes again, however little it reads.
    for (let i = 0; i < 3 && clients.some((c) => !c.socket.destroyed); i++) {
      for (const { socket } of clients) if (!socket.destroyed) socket.write('X-After: 1\r\n');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await Promise.all(clients.map((c) => c.gone));
  }, 60_000);
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
