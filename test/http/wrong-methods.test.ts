/**
 * Every path of the served document asked with each method it is not served with, as clients
 * send them: without a body, with a JSON body, with an empty chunked body and with a text
 * body. Each is a 405 `method_not_allowed` with the path's `Allow`, whatever the body, and the
 * connection is left usable or closed cleanly (never reset under the answer).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { DocumentCheck, type OpenApiDocument } from '../contract/document-check.js';
import { allowOf } from '../contract/fuzz.js';
import { testConfig } from '../support/app.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The bodies a client may send with a request: headers and the bytes after them. */
const BODIES: Array<{ name: string; headers: Record<string, string>; body?: string }> = [
  { name: 'no body', headers: {} },
  { name: 'a JSON body', headers: { 'content-type': 'application/json' }, body: '{}' },
  { name: 'an empty chunked body', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, body: '' },
  { name: 'a text body', headers: { 'content-type': 'text/plain' }, body: 'hello' },
];

const work = mkdtempSync(join(tmpdir(), 'observer-methods-'));
let composed: Awaited<ReturnType<typeof composeApp>>;
let origin: string;
let doc: OpenApiDocument;
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

beforeAll(async () => {
  // Limits no test here reaches: every answer is the refusal of the method.
  const unlimited = '1000000';
  composed = await composeApp(
    testConfig({ DATABASE_URL: `sqlite:${join(work, 'observer.db')}`, RATE_LIMIT_GENERAL: unlimited, RATE_LIMIT_STATUS: unlimited, RATE_LIMIT_MEDIA: unlimited }),
    { logger: false, icmp: null },
  );
  await composed.app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(composed.app.server.address() as AddressInfo).port}`;
  doc = (await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as OpenApiDocument;
});

afterAll(async () => {
  agent.destroy();
  await composed?.app.close();
  rmSync(work, { recursive: true, force: true });
});

interface Answered {
  status: number;
  allow: string | undefined;
  body: string;
  errors: string[];
}

/** One request with Node's own client on a kept-alive connection: the answer and any error met. */
function send(method: string, url: string, headers: Record<string, string>, body: string | undefined): Promise<Answered> {
  return new Promise((resolve) => {
    const answered: Answered = { status: 0, allow: undefined, body: '', errors: [] };
    const sized = body !== undefined && headers['transfer-encoding'] === undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {};
    const req = httpRequest(`${origin}${url}`, { method, headers: { ...headers, ...sized }, agent }, (res) => {
      answered.status = res.statusCode ?? 0;
      answered.allow = res.headers.allow;
      res.on('data', (chunk: Buffer) => (answered.body += chunk.toString('utf8')));
      res.on('end', () => resolve(answered));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      answered.errors.push(error.code ?? error.message);
      resolve(answered);
    });
    req.end(body);
  });
}

describe('a method a path is not served with', () => {
  it('is 405 method_not_allowed with the path\'s Allow on every path of the document, whatever the body', async () => {
    const pairs = new DocumentCheck(doc).operations('x').flatMap(({ path, url }) => {
      const served = new Set(Object.keys(doc.paths[path] ?? {}).map((method) => method.toUpperCase()));
      return METHODS.filter((method) => !served.has(method)).map((method) => ({ path, url, method }));
    });
    // Every path is in the document more than once (one operation per method): once each here.
    const unique = [...new Map(pairs.map((pair) => [`${pair.method} ${pair.path}`, pair])).values()];
    expect(unique.length).toBeGreaterThan(50);
    const wrong: string[] = [];
    for (const { path, url, method } of unique) {
      for (const { name, headers, body } of BODIES) {
        const answer = await send(method, `/api/v1${url}`, headers, body);
        const code = method === 'HEAD' ? 'method_not_allowed' : (JSON.parse(answer.body || '{}') as { error?: string }).error;
        const allow = allowOf(doc, path);
        if (answer.status !== 405 || code !== 'method_not_allowed' || answer.allow !== allow || answer.errors.length > 0) {
          wrong.push(`${method} ${path} with ${name}: ${answer.status} ${String(code)} Allow: ${String(answer.allow)} (expected ${allow}) ${answer.errors.join(' ')}`);
        }
        if (method === 'HEAD' && answer.body !== '') wrong.push(`HEAD ${path} with ${name}: a body`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('requests that take a body', () => {
  it('answer an empty or missing JSON body with the one code, invalid_body', async () => {
    for (const url of ['/api/v1/status/bulk', '/api/v1/watches']) {
      for (const { headers, body } of [
        { headers: {}, body: undefined },
        { headers: { 'content-length': '0' }, body: undefined },
        { headers: { 'content-type': 'application/json' }, body: '' },
        { headers: { 'content-type': 'application/json; charset=utf-8', 'transfer-encoding': 'chunked' }, body: '' },
      ]) {
        const answer = await send('POST', url, headers, body);
        expect(answer.status, `${url} ${JSON.stringify(headers)}`).toBe(400);
        expect(JSON.parse(answer.body), `${url} ${JSON.stringify(headers)}`).toMatchObject({ error: 'invalid_body' });
      }
    }
  });
});
