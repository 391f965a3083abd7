/**
 * The one grammar of parameters (src/http/parameter-grammar.ts): every boolean query parameter
 * accepts true/false, 1/0 and a bare flag (true); every integer or number parameter decimal
 * digits with an optional sign (and fraction, for numbers); anything else is a 400 naming the
 * parameter. The parameters are read from the OpenAPI document, so one added later is covered too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { readParameter } from '../../src/http/parameter-grammar.js';
import { testConfig } from '../support/app.js';

const work = mkdtempSync(join(tmpdir(), 'observer-grammar-'));
let composed: Awaited<ReturnType<typeof composeApp>>;
let app: Awaited<ReturnType<typeof composeApp>>['app'];
beforeAll(async () => {
  const config = testConfig({ RATE_LIMIT_STATUS: '100000', RATE_LIMIT_MEDIA: '100000', RATE_LIMIT_GENERAL: '100000', DATABASE_URL: `sqlite:${join(work, 'observer.db')}` });
  composed = await composeApp(config, { logger: false, icmp: null });
  app = composed.app;
  await app.ready();
});
afterAll(async () => {
  await composed.app.close();
  rmSync(work, { recursive: true, force: true });
});

/** A concrete URL for each path that answers without network: a refused address, or the widget demo. */
function concrete(path: string): string {
  return path
    .replace('{address}', '10.0.0.1')
    .replace('{size}', 'normal')
    .replace(/\/widget\/normal\/10\.0\.0\.1$/, '/widget/normal/demo');
}

/** The GET operations' parameters of these types, from the served document. */
async function parametersOf(types: string[]): Promise<Array<{ path: string; name: string; type: string; minimum?: number }>> {
  // Paths are relative to the document's server, /api/v1.
  const doc = (await app.inject('/api/v1/openapi.json')).json() as {
    paths: Record<string, { get?: { parameters?: Array<{ in: string; name: string; schema: { type?: string; minimum?: number } }> } }>;
  };
  const found: Array<{ path: string; name: string; type: string; minimum?: number }> = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const p of item.get?.parameters ?? []) {
      const type = p.schema.type ?? '';
      if (p.in === 'query' && types.includes(type)) found.push({ path: `/api/v1${path}`, name: p.name, type, ...(p.schema.minimum !== undefined ? { minimum: p.schema.minimum } : {}) });
    }
  }
  return found;
}

const booleanParameters = () => parametersOf(['boolean']);

const query = (path: string) => (path.includes('/icon/') ? 'address=10.0.0.1&' : path.endsWith('/probe') ? 'target=10.0.0.1&' : '');

describe('boolean query flags', () => {
  it('accept true, false, 1, 0 and a bare flag on every boolean parameter; refuse anything else', async () => {
    const params = await booleanParameters();
    // status (2), icons (2 x 2), banner (5), widget (11)
    expect(params.length).toBeGreaterThanOrEqual(20);
    for (const { path, name } of params) {
      const url = `${concrete(path)}?${query(path)}`;
      for (const spelling of [name, `${name}=true`, `${name}=false`, `${name}=1`, `${name}=0`]) {
        const res = await app.inject(url + spelling);
        const body = res.statusCode === 400 ? res.json() : null;
        expect(body?.error === 'invalid_parameter' ? body.message : 'accepted', `${path}?${spelling}`).toBe('accepted');
      }
      for (const spelling of ['maybe', 'TRUE', 'False', 'yes', '2', '%20true', 'true&' + name + '=true']) {
        const refused = await app.inject(`${url}${name}=${spelling}`);
        expect(refused.statusCode, `${path}?${name}=${spelling}`).toBe(400);
        expect(refused.json()).toMatchObject({ error: 'invalid_parameter' });
        expect(refused.json().message).toContain(`"${name}"`);
        expect(refused.json().message).toContain('true, false, 1 or 0');
      }
    }
  });

  it('reads a bare flag and 1 as true, 0 as false', async () => {
    const both = await app.inject('/api/v1/status/10.0.0.1?legacy&bedrock=1');
    expect(both.json()).toMatchObject({ error: 'invalid_query' });
    const neither = await app.inject('/api/v1/status/10.0.0.1?legacy=0&bedrock=0');
    expect(neither.json()).toMatchObject({ error: 'target_refused' });

    const shown = await app.inject('/api/v1/widget/normal/demo?showProtocol');
    const hidden = await app.inject('/api/v1/widget/normal/demo?showProtocol=0');
    const byDefault = await app.inject('/api/v1/widget/normal/demo');
    // The protocol number is off by default: a bare flag turns it on, 0 leaves it off.
    const page = (res: typeof shown) => res.body;
    expect(shown.statusCode).toBe(200);
    expect(page(shown)).not.toBe(page(byDefault));
    expect(page(hidden)).toBe(page(byDefault));
  });
});

describe('integer and number parameters', () => {
  it('refuse Infinity, 1e400, hex, exponents, spaces and empty values with a 400 naming the parameter, on every route', async () => {
    const params = await parametersOf(['integer', 'number']);
    // queryPort, icon sizes (2), banner borderRadius, trends limit, widget borderRadius, borderWidth, refresh
    expect(params.map((p) => p.name)).toEqual(expect.arrayContaining(['queryPort', 'size', 'borderRadius', 'limit', 'borderWidth', 'refresh']));
    for (const { path, name, type, minimum } of params) {
      const url = `${concrete(path)}?${query(path)}`;
      for (const spelling of ['Infinity', '-Infinity', '1e400', '0x10', '0x50', '6.4e1', '%2064', '64%20', '', 'NaN', '1_0', '0b1', '٣']) {
        const res = await app.inject(`${url}${name}=${spelling}`);
        expect(res.statusCode, `${path}?${name}=${spelling}`).toBe(400);
        const body = res.json();
        expect(body, `${path}?${name}=${spelling}`).toMatchObject({ status: 'error', error: 'invalid_parameter' });
        expect(body.message).toContain(`"${name}"`);
        expect(body.message).toContain('decimal digits');
      }
      const valid = minimum ?? 1;
      for (const spelling of [String(valid), `%2B${valid}`, `00${valid}`, ...(type === 'number' ? [`${valid}.0`] : [])]) {
        const res = await app.inject(`${url}${name}=${spelling}`);
        const body = res.statusCode === 400 ? res.json() : null;
        expect(body?.error === 'invalid_parameter' ? body.message : 'accepted', `${path}?${name}=${spelling}`).toBe('accepted');
      }
      if (type === 'integer') expect((await app.inject(`${url}${name}=${valid}.5`)).statusCode, `${path}?${name}=${valid}.5`).toBe(400);
    }
  });

  it('keep the bounds the document gives', async () => {
    const over = await app.inject('/api/v1/banner/10.0.0.1?borderRadius=5');
    expect(over.statusCode).toBe(400);
    expect(over.json().message).toContain('"borderRadius"');
    expect((await app.inject('/api/v1/trends?limit=51')).json()).toMatchObject({ error: 'invalid_parameter' });
    expect((await app.inject('/api/v1/trends?limit=99999999999999999999999')).json()).toMatchObject({ error: 'invalid_parameter' });
    expect((await app.inject('/api/v1/trends?limit=-0')).json()).toMatchObject({ error: 'invalid_parameter' });
    expect((await app.inject('/api/v1/trends?limit=5')).statusCode).toBe(200);
    expect((await app.inject('/api/v1/status/10.0.0.1?queryPort=65536')).json()).toMatchObject({ error: 'invalid_parameter' });
  });

  it('takes the JSON types of a bulk body as they are: no string for a number or a flag', async () => {
    const post = (entry: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: '/api/v1/status/bulk', headers: { 'content-type': 'application/json' }, payload: { servers: [{ address: '10.0.0.1', ...entry }] } });
    for (const entry of [{ queryPort: '80' }, { queryPort: 'Infinity' }, { bedrock: 'true' }, { legacy: 1 }, { queryPort: 80.5 }]) {
      const res = await post(entry);
      expect(res.statusCode, JSON.stringify(entry)).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_parameter' });
    }
    expect((await post({ queryPort: 80, query: true })).statusCode).toBe(200);
  });
});

describe('readParameter', () => {
  it.each([
    ['integer', '64', 64],
    ['integer', '-3', -3],
    ['integer', '+7', 7],
    ['integer', '007', 7],
    ['integer', '9007199254740991', 9007199254740991],
    ['integer', '9007199254740993', undefined],
    ['integer', '1.0', undefined],
    ['integer', '1e3', undefined],
    ['integer', '0x10', undefined],
    ['integer', ' 64', undefined],
    ['integer', '64 ', undefined],
    ['integer', 'Infinity', undefined],
    ['integer', '', undefined],
    ['integer', '٣', undefined],
    ['number', '1.5', 1.5],
    ['number', '.5', 0.5],
    ['number', '-2', -2],
    ['number', '1.', undefined],
    ['number', '1e400', undefined],
    ['number', '9'.repeat(400), undefined],
    ['number', 'NaN', undefined],
    ['boolean', 'true', true],
    ['boolean', '1', true],
    ['boolean', '', true],
    ['boolean', 'false', false],
    ['boolean', '0', false],
    ['boolean', 'TRUE', undefined],
    ['boolean', 'yes', undefined],
    ['boolean', 'constructor', undefined],
  ] as const)('%s %j: %j', (kind, text, expected) => {
    expect(readParameter(kind, text)).toBe(expected);
  });
});
