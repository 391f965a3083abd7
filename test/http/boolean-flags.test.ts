/**
 * Every boolean query parameter accepts true/false, 1/0 and a bare flag (true), and refuses
 * anything else with a 400 naming it. The parameters are read from the OpenAPI document, so a
 * flag added later is covered too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';

let app: Awaited<ReturnType<typeof buildApp>>;
beforeAll(async () => {
  const config = testConfig({ RATE_LIMIT_STATUS: '100000', RATE_LIMIT_MEDIA: '100000' });
  app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.ready();
});
afterAll(async () => {
  await app.close();
});

/** A concrete URL for each path that answers without network: a refused address, or the widget demo. */
function concrete(path: string): string {
  return path
    .replace('{address}', '10.0.0.1')
    .replace('{size}', 'normal')
    .replace(/\/widget\/normal\/10\.0\.0\.1$/, '/widget/normal/demo');
}

async function booleanParameters(): Promise<Array<{ path: string; name: string }>> {
  // Paths are relative to the document's server, /api/v1.
  const doc = (await app.inject('/api/v1/openapi.json')).json() as {
    paths: Record<string, { get?: { parameters?: Array<{ in: string; name: string; schema: { type?: string } }> } }>;
  };
  const found: Array<{ path: string; name: string }> = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const p of item.get?.parameters ?? []) if (p.in === 'query' && p.schema.type === 'boolean') found.push({ path: `/api/v1${path}`, name: p.name });
  }
  return found;
}

const query = (path: string) => (path.includes('/icon/') ? 'address=10.0.0.1&' : path.endsWith('/probe') ? 'target=10.0.0.1&' : '');

describe('boolean query flags', () => {
  it('accept true, false, 1, 0 and a bare flag on every boolean parameter; refuse anything else', async () => {
    const params = await booleanParameters();
    // status (2), icons (2 x 2), banner (5), widget (11)
    expect(params.length).toBeGreaterThanOrEqual(20);
    for (const { path, name } of params) {
      const url = `${concrete(path)}?${query(path)}`;
      for (const spelling of [name, `${name}=true`, `${name}=false`, `${name}=1`, `${name}=0`, `${name}=TRUE`]) {
        const res = await app.inject(url + spelling);
        const body = res.statusCode === 400 ? res.json() : null;
        expect(body?.error === 'invalid_parameter' ? body.message : 'accepted', `${path}?${spelling}`).toBe('accepted');
      }
      const refused = await app.inject(`${url}${name}=maybe`);
      expect(refused.statusCode, `${path}?${name}=maybe`).toBe(400);
      expect(refused.json()).toMatchObject({ error: 'invalid_parameter' });
      expect(refused.json().message).toContain(name);
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
