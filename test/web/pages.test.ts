/**
 * The pages and their files over HTTP (buildApp + app.inject, the built dist/web): headers
 * (CSP, nosniff, caching), hashed assets with gzip twins, the favicon, rate-limit tier,
 * maintenance and CORS hooks, and a front that was never built.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_WEB_DIR, type WebManifest } from '../../src/http/routes/pages.js';
import { testApp } from '../support/app.js';

const manifest = JSON.parse(readFileSync(join(DEFAULT_WEB_DIR, 'manifest.json'), 'utf8')) as WebManifest;
const emptyDir = mkdtempSync(join(tmpdir(), 'observer-noweb-'));
afterAll(() => rmSync(emptyDir, { recursive: true, force: true }));

function cspOf(header: unknown): Map<string, string> {
  return new Map(
    String(header)
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values.join(' ')]),
  );
}

describe('pages', () => {
  for (const url of ['/', '/server/play.example.com', '/server/play.example.com:25566?bedrock', '/server/%5B2001%3Adb8%3A%3A1%5D%3A25565/']) {
    it(`${url}: the HTML shell with a strict CSP, nosniff, no inline script, relative URLs`, async () => {
      const app = await testApp();
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['cache-control']).toBe('no-cache');
      const csp = cspOf(response.headers['content-security-policy']);
      expect(csp.get('default-src')).toBe("'self'");
      expect(csp.get('script-src')).toBe("'self'");
      expect(csp.get('style-src')).toBe("'self'");
      expect(csp.get('object-src')).toBe("'none'");
      expect(csp.get('base-uri')).toBe("'none'");
      expect(response.headers['content-security-policy']).not.toMatch(/unsafe|https?:|\*/);
      const html = response.body;
      expect(html).toMatch(/^<!doctype html><html lang="en">/);
      expect(html).toMatch(/<title>[^<]+<\/title>/);
      // Scripts only by src (module), styles only by link; no inline handlers.
      expect(html.match(/<script\b[^>]*>/g)).toEqual([expect.stringMatching(/^<script type="module" src="[^"]+">$/)]);
      expect(html).not.toMatch(/<style|\son[a-z]+=|style="/);
      // Relative to the page, so that a proxy prefix keeps working.
      const depth = url.split('?')[0]!.split('/').length - 2;
      const prefix = depth > 0 ? '../'.repeat(depth) : './';
      expect(html).toContain(`src="${prefix}assets/${manifest.js}"`);
      expect(html).toContain(`href="${prefix}assets/${manifest.css}"`);
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
      await app.close();
    });
  }

  it('escapes the address in the server page title', async () => {
    const app = await testApp();
    const response = await app.inject({ method: 'GET', url: `/server/${encodeURIComponent('<script>x</script>')}` });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('<title>&lt;script&gt;x&lt;/script&gt;: server status');
    expect(response.body).not.toContain('<script>x');
    await app.close();
  });

  it('are on the general rate-limit tier', async () => {
    const app = await testApp({ RATE_LIMIT_GENERAL: '2' });
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) codes.push((await app.inject({ method: 'GET', url: i === 1 ? '/server/a.example' : '/' })).statusCode);
    expect(codes).toEqual([200, 200, 429]);
    const limited = await app.inject({ method: 'GET', url: '/' });
    expect(limited.headers['ratelimit-policy']).toMatch(/^"general"/);
    expect(limited.json()).toMatchObject({ status: 'error', error: expect.any(String) });
    await app.close();
  });

  it('answer 503 with Retry-After in maintenance, like the API; CORS stays open', async () => {
    const app = await testApp({ MAINTENANCE_MODE: 'true' });
    const response = await app.inject({ method: 'GET', url: '/' });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
    expect(response.json()).toMatchObject({ status: 'error', error: 'maintenance' });
    await app.close();
    const open = await testApp();
    expect((await open.inject({ method: 'GET', url: '/' })).headers['access-control-allow-origin']).toBe('*');
    await open.close();
  });

  it('answer 503 not_built when the front has not been built', async () => {
    const app = await testApp({}, { webDir: emptyDir });
    for (const url of ['/', '/server/play.example.com']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ status: 'error', error: 'not_built' });
    }
    expect((await app.inject({ method: 'GET', url: `/assets/${manifest.js}` })).statusCode).toBe(404);
    await app.close();
  });
});

describe('assets', () => {
  it('serves the hashed files for a year, immutable, gzipped for clients that accept it', async () => {
    const app = await testApp();
    for (const [file, type] of [
      [manifest.js, 'text/javascript; charset=utf-8'],
      [manifest.css, 'text/css; charset=utf-8'],
    ] as const) {
      expect(file).toMatch(/-[A-Z0-9]{8}\.(js|css)$/);
      const plain = await app.inject({ method: 'GET', url: `/assets/${file}` });
      expect(plain.statusCode).toBe(200);
      expect(plain.headers['content-type']).toBe(type);
      expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(plain.headers['x-content-type-options']).toBe('nosniff');
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers.vary).toMatch(/accept-encoding/i);
      const gzip = await app.inject({ method: 'GET', url: `/assets/${file}`, headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gzip.rawPayload).toString('utf8')).toBe(plain.body);
      expect(gzip.rawPayload.length).toBeLessThan(plain.rawPayload.length);
    }
    // The app's JavaScript budget: 50 KiB gzipped.
    const js = await app.inject({ method: 'GET', url: `/assets/${manifest.js}`, headers: { 'accept-encoding': 'gzip' } });
    expect(js.rawPayload.length).toBeLessThanOrEqual(50 * 1024);
    await app.close();
  });

  it('honours Accept-Encoding q-values: gzip;q=0 gets the identity body, gzip the gzip twin', async () => {
    const app = await testApp();
    const identity = await app.inject({ method: 'GET', url: `/assets/${manifest.js}` });
    for (const refusing of ['gzip;q=0', 'identity', 'gzip;q=0, deflate;q=0', 'GZIP;q=0.000']) {
      const answer = await app.inject({ method: 'GET', url: `/assets/${manifest.js}`, headers: { 'accept-encoding': refusing } });
      expect(answer.statusCode, refusing).toBe(200);
      expect(answer.headers['content-encoding'], refusing).toBeUndefined();
      expect(answer.rawPayload.equals(identity.rawPayload), refusing).toBe(true);
      expect(answer.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    }
    for (const accepting of ['gzip', 'gzip;q=0.5', 'br;q=0, gzip;q=0.1', '*']) {
      const answer = await app.inject({ method: 'GET', url: `/assets/${manifest.js}`, headers: { 'accept-encoding': accepting } });
      expect(answer.headers['content-encoding'], accepting).toBe('gzip');
      expect(gunzipSync(answer.rawPayload).equals(identity.rawPayload), accepting).toBe(true);
      expect(answer.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(answer.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    }
    await app.close();
  });

  it('answers 404 JSON for any other name, including paths out of the folder', async () => {
    const app = await testApp();
    for (const url of ['/assets/app.js', '/assets/manifest.json', '/assets/..%2Fmanifest.json', `/assets/${manifest.js}.gz`]) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json()).toMatchObject({ status: 'error' });
    }
    await app.close();
  });

  it('/favicon.ico is an ICO holding the default icon as a 64x64 PNG', async () => {
    const app = await testApp();
    const response = await app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('image/x-icon');
    const body = response.rawPayload;
    expect([...body.subarray(0, 6)]).toEqual([0, 0, 1, 0, 1, 0]);
    expect(body[6]).toBe(64);
    expect(body[7]).toBe(64);
    const size = body.readUInt32LE(14);
    const offset = body.readUInt32LE(18);
    expect(offset + size).toBe(body.length);
    expect(body.subarray(offset, offset + 8).toString('hex')).toBe('89504e470d0a1a0a');
    await app.close();
  });
});
