import { afterEach, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { logCapture, testApp } from '../support/app.js';

type App = Awaited<ReturnType<typeof testApp>>;
let app: App | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('GET /api/v1/status (health)', () => {
  it('answers the spec shape, uncached, without rate-limit headers', async () => {
    app = await testApp();
    const res = await app.inject({ method: 'GET', url: '/api/v1/status' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['ratelimit']).toBeUndefined();
    const body = res.json();
    expect(body).toEqual({
      status: 'OK',
      timestamp: expect.any(String),
      service: 'observer',
      version: (await import('../../package.json', { with: { type: 'json' } })).default.version,
    });
    expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp);
  });

  it('is never rate-limited', async () => {
    app = await testApp({ RATE_LIMIT_STATUS: '1', RATE_LIMIT_GENERAL: '1', RATE_LIMIT_MEDIA: '1' });
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/status' });
      expect(res.statusCode).toBe(200);
    }
  });
});

describe('errors', () => {
  it('unknown routes are a 404 in the error shape', async () => {
    app = await testApp();
    const res = await app.inject({ method: 'GET', url: '/api/v1/nothing-here?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ status: 'error', error: 'not_found', message: 'No route GET /api/v1/nothing-here.' });
  });

  it('a method a known path is not served with is a 405 with Allow, in the error shape too', async () => {
    app = await testApp();
    const res = await app.inject({ method: 'POST', url: '/api/v1/status' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, OPTIONS');
    expect(res.json()).toMatchObject({ status: 'error', error: 'method_not_allowed' });
  });
});

describe('unexpected errors', () => {
  it('are a 500 in the error shape that leaks nothing', async () => {
    const { buildApp } = await import('../../src/http/app.js');
    const { testConfig } = await import('../support/app.js');
    const { lines, stream } = logCapture();
    app = await buildApp({ config: testConfig(), logger: { level: 'error', stream } });
    app.get('/boom', async () => {
      throw new Error('ECONNREFUSED 10.1.2.3:5432 at /srv/observer/secret.ts:42');
    });
    const res = await app.inject({ method: 'GET', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ status: 'error', error: 'internal_error', message: 'An unexpected error occurred.' });
    expect(res.body).not.toContain('10.1.2.3');
    // The detail goes to the log for operators.
    expect(lines.join('\n')).toContain('secret.ts');
  });
});

describe('CORS', () => {
  it('allows every origin on simple requests and errors', async () => {
    app = await testApp();
    const ok = await app.inject({ method: 'GET', url: '/api/v1/status', headers: { origin: 'https://fans.example' } });
    expect(ok.headers['access-control-allow-origin']).toBe('*');
    // Browser clients may read the rate-limit and cache headers.
    expect(ok.headers['access-control-expose-headers']).toContain('RateLimit');
    expect(ok.headers['access-control-expose-headers']).toContain('Retry-After');
    const missing = await app.inject({ method: 'GET', url: '/nope', headers: { origin: 'https://fans.example' } });
    expect(missing.headers['access-control-allow-origin']).toBe('*');
  });

  /** A browser's preflight from another origin, for `method` (and request `headers`, if any). */
  const preflight = (url: string, method: string, headers?: string) =>
    app!.inject({
      method: 'OPTIONS',
      url,
      headers: { origin: 'https://fans.example', 'access-control-request-method': method, ...(headers ? { 'access-control-request-headers': headers } : {}) },
    });

  it('answers preflight requests', async () => {
    app = await testApp();
    const res = await preflight('/api/v1/status', 'GET');
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toContain('GET');
    const withHeaders = await preflight('/api/v1/trends?limit=5', 'GET', 'x-requested-with');
    expect(withHeaders.statusCode).toBe(204);
    expect(withHeaders.headers['access-control-allow-headers']).toBe('x-requested-with');
  });

  it('allows POST in the preflight of the bulk look-up (a JSON body needs one)', async () => {
    app = await testApp();
    const res = await preflight('/api/v1/status/bulk', 'POST', 'content-type');
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(String(res.headers['access-control-allow-methods']).split(/,\s*/)).toContain('POST');
    expect(res.headers['access-control-allow-headers']).toBe('content-type');
  });
});

describe('maintenance mode', () => {
  it('answers 503 with Retry-After everywhere but health', async () => {
    app = await testApp({ MAINTENANCE_MODE: 'true' });
    for (const url of ['/api/v1/openapi.json', '/docs', '/api/v1/nothing']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.json()).toMatchObject({ status: 'error', error: 'maintenance' });
    }
    const health = await app.inject({ method: 'GET', url: '/api/v1/status' });
    expect(health.statusCode).toBe(200);
    expect(health.json().status).toBe('OK');
  });
});

describe('rate limits', () => {
  it('limits a general route per client, then 429 with Retry-After and IETF headers', async () => {
    app = await testApp({ RATE_LIMIT_GENERAL: '3' });
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await app.inject({ method: 'GET', url: '/api/v1/openapi.json', remoteAddress: '198.51.100.7' });
      statuses.push(last.statusCode);
      if (i === 0) {
        expect(last.headers['ratelimit-policy']).toBe('"general";q=3;w=60');
        expect(last.headers['ratelimit']).toMatch(/^"general";r=2;t=\d+$/);
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last!.headers['retry-after']).toMatch(/^\d+$/);
    expect(last!.headers['ratelimit']).toMatch(/^"general";r=0;t=\d+$/);
    expect(last!.json()).toMatchObject({ status: 'error', error: 'rate_limited' });
    expect(last!.json().message).toContain('3 requests per minute');
    // Another client is not affected.
    const other = await app.inject({ method: 'GET', url: '/api/v1/openapi.json', remoteAddress: '198.51.100.8' });
    expect(other.statusCode).toBe(200);
  });

  it('groups IPv6 clients by /64', async () => {
    app = await testApp({ RATE_LIMIT_GENERAL: '2' });
    const hit = (ip: string) => app!.inject({ method: 'GET', url: '/api/v1/openapi.json', remoteAddress: ip });
    expect((await hit('2001:db8:1:2::1')).statusCode).toBe(200);
    expect((await hit('2001:db8:1:2:ffff::9')).statusCode).toBe(200);
    expect((await hit('2001:db8:1:2:abcd::5')).statusCode).toBe(429);
    expect((await hit('2001:db8:1:3::1')).statusCode).toBe(200);
  });

  it('keys on X-Forwarded-For only when TRUST_PROXY is on', async () => {
    app = await testApp({ RATE_LIMIT_GENERAL: '1' });
    const viaProxy = (xff: string) =>
      app!.inject({ method: 'GET', url: '/api/v1/openapi.json', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': xff } });
    expect((await viaProxy('198.51.100.1')).statusCode).toBe(200);
    expect((await viaProxy('198.51.100.2')).statusCode).toBe(429);
    await app.close();

    app = await testApp({ RATE_LIMIT_GENERAL: '1', TRUST_PROXY: 'true' });
    expect((await viaProxy('198.51.100.1')).statusCode).toBe(200);
    expect((await viaProxy('198.51.100.2')).statusCode).toBe(200);
    expect((await viaProxy('198.51.100.2')).statusCode).toBe(429);
    // A client cannot escape its limit by prepending addresses: the proxy's own hop counts.
    expect((await viaProxy('203.0.113.9, 198.51.100.2')).statusCode).toBe(429);
  });

  it('with TRUST_PROXY as a CIDR list, believes X-Forwarded-For only from those peers', async () => {
    app = await testApp({ RATE_LIMIT_GENERAL: '1', TRUST_PROXY: '127.0.0.1/32, 10.0.0.0/8' });
    const from = (peer: string, xff: string) =>
      app!.inject({ method: 'GET', url: '/api/v1/openapi.json', remoteAddress: peer, headers: { 'x-forwarded-for': xff } });
    // Through the trusted proxy, each forwarded client has its own key...
    expect((await from('127.0.0.1', '198.51.100.1')).statusCode).toBe(200);
    expect((await from('127.0.0.1', '198.51.100.2')).statusCode).toBe(200);
    expect((await from('127.0.0.1', '198.51.100.2')).statusCode).toBe(429);
    // ...past a chain of trusted hops, the first untrusted address from the right is the client...
    expect((await from('127.0.0.1', '203.0.113.9, 198.51.100.3, 10.1.2.3')).statusCode).toBe(200);
    expect((await from('127.0.0.1', '198.51.100.3')).statusCode).toBe(429);
    // ...and a peer outside the list is the client whatever it forwards.
    expect((await from('198.51.100.50', '198.51.100.60')).statusCode).toBe(200);
    expect((await from('198.51.100.50', '198.51.100.61')).statusCode).toBe(429);
  });

  it('warns at start-up when TRUST_PROXY=true meets a non-loopback bind', async () => {
    const warnings = async (env: Record<string, string>) => {
      const { lines, stream } = logCapture();
      const built = await testApp(env, { logger: { level: 'warn', stream } });
      await built.close();
      return lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((e) => e.msg.includes('TRUST_PROXY'));
    };
    const open = await warnings({ TRUST_PROXY: 'true', HOST: '0.0.0.0' });
    expect(open).toHaveLength(1);
    expect(open[0]!.level).toBe(40);
    expect(await warnings({ TRUST_PROXY: 'true', HOST: '127.0.0.1' })).toEqual([]);
    expect(await warnings({ TRUST_PROXY: '10.0.0.0/8', HOST: '0.0.0.0' })).toEqual([]);
  });
});

describe('OpenAPI', () => {
  it('serves a valid OpenAPI 3.1 document', async () => {
    app = await testApp();
    const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(Object.keys(doc.paths)).toContain('/status');
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('serves the docs page and its assets itself', async () => {
    app = await testApp();
    const page = await app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const html = page.body;
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      expect(asset, 'no third-party asset').not.toMatch(/^(https?:)?\/\//);
      const url = new URL(asset, 'http://local/docs/').pathname;
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
    }
  });
});

describe('logging', () => {
  it('logs request id, route, status and duration, never the client address or user agent', async () => {
    const { lines, stream } = logCapture();
    app = await testApp({ TRUST_PROXY: 'true', LOG_REQUESTS: 'true' }, { logger: { level: 'info', stream } });
    await app.inject({
      method: 'GET',
      url: '/api/v1/nothing',
      remoteAddress: '198.51.100.44',
      headers: { 'x-forwarded-for': '203.0.113.201', 'user-agent': 'DistinctiveAgent/9.9' },
    });
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const done = entries.find((e) => e.msg === 'request completed');
    expect(done).toMatchObject({ reqId: expect.any(String), statusCode: 404, durationMs: expect.any(Number) });
    expect(done).toHaveProperty('route');
    const all = lines.join('\n');
    expect(all).not.toContain('198.51.100.44');
    expect(all).not.toContain('203.0.113.201');
    expect(all).not.toContain('DistinctiveAgent');
  });
});

describe('logging without LOG_REQUESTS (the default)', () => {
  it('writes no access line for a normal request', async () => {
    const { lines, stream } = logCapture();
    app = await testApp({}, { logger: { level: 'info', stream } });
    expect((await app.inject({ url: '/api/v1/status' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/api/v1/nothing' })).statusCode).toBe(404);
    expect(lines.filter((l) => l.includes('request completed'))).toEqual([]);
  });

  it('still logs a slow request as a warning, without the client address', async () => {
    const { lines, stream } = logCapture();
    // Every request counts as slow with a threshold of 0 ms.
    app = await testApp({ TRUST_PROXY: 'true' }, { logger: { level: 'info', stream }, slowRequestMs: 0 });
    await app.inject({ url: '/api/v1/status', remoteAddress: '198.51.100.45', headers: { 'x-forwarded-for': '203.0.113.202' } });
    const slow = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.msg === 'slow request');
    expect(slow).toMatchObject({ level: 40, reqId: expect.any(String), route: '/api/v1/status', statusCode: 200, durationMs: expect.any(Number) });
    expect(lines.join('\n')).not.toContain('198.51.100.45');
    expect(lines.join('\n')).not.toContain('203.0.113.202');
  });
});
