/**
 * What a request meets before any route, over real sockets: the refusals Node would write in
 * its own shape (431, 400, 408) and wrong methods (405), each in the one JSON error shape with
 * the CORS headers a browser needs to read it.
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { systemClock } from '../../src/core/clock.js';
import { createStatusService } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';
import { startSilentServer } from '../support/hostile.js';

let app: Awaited<ReturnType<typeof buildApp>>;
let port: number;
const sockets: Socket[] = [];
beforeAll(async () => {
  const config = testConfig({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '1000' });
  app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await app.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `bytes` on a new connection (more after `pause` ms, when given); the answer once the server closes it. */
function raw(bytes: string): Promise<RawAnswer> {
  const socket = connect({ host: '127.0.0.1', port });
  sockets.push(socket);
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString('latin1')));
  socket.on('error', () => {});
  socket.write(bytes);
  return new Promise((resolve) =>
    socket.on('close', () => {
      const [head = '', ...rest] = received.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    }),
  );
}

function expectError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers['access-control-allow-origin']).toBe('*');
  expect(answer.headers['access-control-expose-headers']).toContain('Retry-After');
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['error', 'message', 'status']);
  expect(body).toMatchObject({ status: 'error', error: code });
}

describe('refusals before any route', () => {
  it('answers a 20 KB URL with 431 headers_too_large', async () => {
    expectError(await raw(`GET /api/v1/status/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), 431, 'headers_too_large');
    expectError(await raw(`GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`), 431, 'headers_too_large');
  });

  it('answers a malformed request line or header, or HTTP/1.1 without Host, with 400 bad_request', async () => {
    expectError(await raw('GET /api/v1/status HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n'), 400, 'bad_request');
    expectError(await raw('GET /api/ v1/status HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'bad_request');
    expectError(await raw('GET /api/v1/status HTTP/1.1\r\nConnection: close\r\n\r\n'), 400, 'bad_request');
  });

  it('answers a request head not received in time with 408 request_timeout', async () => {
    expectError(await raw('GET /api/v1/status HTTP/1.1\r\nHost: x\r\n'), 408, 'request_timeout');
  });

  it('answers a HEAD refused before parsing with headers only, which Node\'s client reads', async () => {
    const big = await raw(`HEAD /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big.status).toBe(431);
    expect(big.headers['content-type']).toMatch(/^application\/json/);
    expect(big.headers['access-control-allow-origin']).toBe('*');
    expect(big.body).toBe('');
    const malformed = await raw('HEAD /api/v1/status HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n');
    expect([malformed.status, malformed.body]).toEqual([400, '']);
    // The same GET keeps its body.
    expectError(await raw(`GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`), 431, 'headers_too_large');

    const answer = await new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/api/v1/status', method: 'HEAD', headers: { 'x-pad': 'a'.repeat(17_000) } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', (error) => resolve({ error: error.message }));
      req.end();
    });
    expect(answer).toEqual({ status: 431, body: '' });
  });

  it('serves a request with an unknown expectation as if it had none', async () => {
    const answer = await raw('GET /api/v1/status HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n');
    expect(answer.status).toBe(200);
  });
});

describe('a stopping instance', () => {
  it('answers a request that arrives while it stops with 503 shutting_down, Retry-After and CORS', async () => {
    const config = testConfig({ PING_TIMEOUT_MS: '1000' });
    const stopping = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
    await stopping.listen({ host: '127.0.0.1', port: 0 });
    const silent = await startSilentServer();
    try {
      const socket = connect({ host: '127.0.0.1', port: (stopping.server.address() as { port: number }).port });
      sockets.push(socket);
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('error', () => {});
      const closed = new Promise((resolve) => socket.on('close', resolve));
      // A look-up the silent server holds keeps the connection busy while the instance stops.
      socket.write(`GET /api/v1/status/127.0.0.1:${silent.port} HTTP/1.1\r\nHost: x\r\n\r\n`);
      for (let i = 0; i < 200 && silent.accepted() === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      const closing = stopping.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.write('GET /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await Promise.all([closed, closing]);
      const second = received.slice(received.indexOf('HTTP/1.1', 1));
      expect(received).toMatch(/^HTTP\/1\.1 200 /);
      expect(second).toMatch(/^HTTP\/1\.1 503 /);
      expect(second).toMatch(/\r\nretry-after: 5\r\n/i);
      expect(second).toMatch(/\r\naccess-control-allow-origin: \*\r\n/i);
      expect(second).toContain('"error":"shutting_down"');
    } finally {
      await silent.close();
    }
  });
});

describe('wrong methods', () => {
  it('answer 405 method_not_allowed with Allow on a known path, 404 on an unknown one', async () => {
    for (const [method, url, allow] of [
      ['PUT', '/api/v1/status/example.com', 'GET, HEAD, OPTIONS'],
      ['DELETE', '/api/v1/trends', null],
      ['POST', '/api/v1/status/example.com', 'GET, HEAD, OPTIONS'],
      ['PATCH', '/api/v1/icon/dynamic?address=x', 'GET, HEAD, OPTIONS'],
      ['GET', '/api/v1/status/bulk', 'POST, OPTIONS'],
      ['DELETE', '/api/v1/status/bulk', 'POST, OPTIONS'],
    ] as const) {
      const answer = await raw(`${method} ${url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      if (allow === null) {
        // No store: /trends is not served by this instance at all.
        expectError(answer, 404, 'not_found');
        continue;
      }
      expectError(answer, 405, 'method_not_allowed');
      expect(answer.headers.allow, `${method} ${url}`).toBe(allow);
      expect(answer.headers['access-control-expose-headers']).toContain('Allow');
      expect(JSON.parse(answer.body).message).toContain(method);
    }
    const head = await raw('HEAD /api/v1/status/bulk HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(head.status).toBe(405);
    expect(head.headers.allow).toBe('POST, OPTIONS');
  });
});

describe('media types and CORS', () => {
  it('refuses a text/plain POST with an empty body with 415', async () => {
    const answer = await raw('POST /api/v1/status/bulk HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    expectError(answer, 415, 'unsupported_media_type');
  });

  it('exposes X-Render-Cache to browsers', async () => {
    const res = await app.inject('/api/v1/status');
    expect(String(res.headers['access-control-expose-headers'])).toContain('X-Render-Cache');
  });
});
