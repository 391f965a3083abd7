/**
 * GET /api/v1/widget/{size}/{address} and /api/v1/widget/fonts/{file} through `app.inject`,
 * with the real status service: every bound and bad value is a 400 naming the parameter, the
 * headers of an embeddable page, the demo, unknown hosts and the font files.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import type { StatusLookup } from '../../src/status/types.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';

let app: Awaited<ReturnType<typeof buildApp>>;
/** Addresses the status service was asked about, in order. */
const lookups: string[] = [];

beforeAll(async () => {
  const config = testConfig({ RATE_LIMIT_MEDIA: '100000' });
  const service = createStatusService({ config, clock: systemClock, icmp: null });
  // The real service, with a record of what it is asked.
  const status: StatusLookup = {
    lookup: (address, mode, options) => {
      lookups.push(address);
      return service.lookup(address, mode, options);
    },
  };
  app = await buildApp({ config, status, logger: false });
  await app.ready();
});
afterAll(async () => {
  await app.close();
});
const get = (url: string) => app.inject({ method: 'GET', url });
const demo = (query: string) => get(`/api/v1/widget/normal/demo?${query}`);

describe('/api/v1/widget/{size}/{address}', () => {
  it.each(['small', 'normal', 'large'])('renders the %s demo as one self-contained, embeddable page', async (size) => {
    const before = lookups.length;
    const res = await get(`/api/v1/widget/${size}/demo`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['x-frame-options']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('public, max-age=60, stale-while-revalidate=300');
    const csp = String(res.headers['content-security-policy']);
    // The one inline script is allowed by the hash of its exact text.
    const scripts = [...res.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts).toHaveLength(1);
    expect(scripts[0]![1]).toBe('');
    const hash = createHash('sha256').update(scripts[0]![2]!, 'utf8').digest('base64');
    expect(csp).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; font-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        `script-src 'sha256-${hash}'; base-uri 'none'; form-action 'none'; frame-ancestors *`,
    );
    // No script, style, image or font from another origin.
    expect(res.body).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(res.body).not.toMatch(/url\(["']?(https?:)?\/\//);
    expect(res.body).toContain(`class="w w--${size}`);
    // The demo is sample data: the status service is never asked.
    expect(lookups.length).toBe(before);
  });

  it('is the same page with the same policy for every visitor, as a publicly cached page must be', async () => {
    const first = await demo('');
    const second = await demo('');
    expect(second.body).toBe(first.body);
    expect(second.headers['content-security-policy']).toBe(first.headers['content-security-policy']);
    expect(String(first.headers['content-security-policy'])).not.toContain('nonce');
  });

  it('reaches the API relative to its own URL, with or without a trailing slash', async () => {
    expect((await demo('font=Inter')).body).toContain('url("../../widget/fonts/inter-latin-400-normal.woff2")');
    const slash = await get('/api/v1/widget/normal/demo/?font=Inter');
    expect(slash.statusCode).toBe(200);
    expect(slash.body).toContain('data-api="../../.."');
    expect(slash.body).toContain('url("../../../widget/fonts/inter-latin-400-normal.woff2")');
  });

  it('renders a host with no DNS records as offline, and refreshes it', async () => {
    const res = await get('/api/v1/widget/small/missing.observer.test');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('data-state="offline"');
    expect(res.body).toContain('data-address="missing.observer.test"');
    expect(res.body).toContain('unknown host');
    expect(lookups).toContain('missing.observer.test');
    // The stand-in has no check time: the tooltip does not claim a check in 1970.
    expect(res.body).not.toContain('1970');
    expect(res.body).toContain('class="w__status" title="Offline"');
  });

  it('renders a closed port as offline with the reason', async () => {
    const res = await get('/api/v1/widget/normal/127.0.0.1:1?bedrock=false');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('data-state="offline"');
    expect(res.body).toContain('connection refused');
  });

  it.each([
    ['theme=light'],
    ['showPlayers=false&showVersion=false&showMotd=false&showLatency=false&showFavicon=false'],
    ['showProtocol=true&showBorder=true&gradientBg=true&hoverEffect=true&glowEffect=true&boxShadow=true'],
    ['bgColor=%23abc&textColor=ABCDEF&onlineColor=%2300FF00&offlineColor=f00&gradientFrom=%23123456&gradientTo=654321'],
    ['statusIndicator=badge&iconSize=large&font=Poppins&textAlign=right&playerBarStyle=animated'],
    ['font=outfit'],
    ['borderRadius=0&borderWidth=0'],
    ['borderRadius=10&borderWidth=10'],
    ['borderRadius=1.5&borderWidth=2.5'],
    ['refresh=5'],
    ['refresh=3600'],
    ['utm_source=forum&v=2'],
  ])('accepts %s', async (query) => {
    const res = await demo(query);
    expect(res.statusCode, res.body).toBe(200);
  });

  it.each(['120', '120px', '50', '600', '600px'])('accepts customHeight=%s', async (value) => {
    const res = await demo(`customHeight=${value}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`--h:${parseInt(value, 10)}px`);
  });

  const flags = ['showPlayers', 'showVersion', 'showMotd', 'showLatency', 'showFavicon', 'showProtocol', 'showBorder', 'gradientBg', 'hoverEffect', 'glowEffect', 'boxShadow'];
  const colors = ['bgColor', 'textColor', 'onlineColor', 'offlineColor', 'gradientFrom', 'gradientTo'];
  it.each([
    ['/api/v1/widget/medium/demo', 'size'],
    ['/api/v1/widget/Normal/demo', 'size'],
    ['/api/v1/widget/normal/demo?theme=purple', 'theme'],
    ['/api/v1/widget/normal/demo?theme=', 'theme'],
    ['/api/v1/widget/normal/demo?theme=dark&theme=light', 'theme'],
    ...flags.map((flag) => [`/api/v1/widget/normal/demo?${flag}=perhaps`, flag]),
    ...flags.map((flag) => [`/api/v1/widget/normal/demo?${flag}=2`, flag]),
    ...colors.flatMap((color) =>
      ['red', '%2312', '%23zzzzzz', '1234567', '%23ff', '%23%23fff', 'rgb(0,0,0)', '%23fff;x', ''].map((value) => [
        `/api/v1/widget/normal/demo?${color}=${value}`,
        color,
      ]),
    ),
    ['/api/v1/widget/normal/demo?statusIndicator=blink', 'statusIndicator'],
    ['/api/v1/widget/normal/demo?statusIndicator=Dot', 'statusIndicator'],
    ['/api/v1/widget/normal/demo?iconSize=huge', 'iconSize'],
    ['/api/v1/widget/normal/demo?font=Comic%20Sans', 'font'],
    ['/api/v1/widget/normal/demo?font=', 'font'],
    ['/api/v1/widget/normal/demo?textAlign=justify', 'textAlign'],
    ['/api/v1/widget/normal/demo?customHeight=49', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=601', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=601px', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=0', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=-120', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=120.5', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=12em', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=px', 'customHeight'],
    ['/api/v1/widget/normal/demo?borderRadius=-1', 'borderRadius'],
    ['/api/v1/widget/normal/demo?borderRadius=10.01', 'borderRadius'],
    ['/api/v1/widget/normal/demo?borderRadius=abc', 'borderRadius'],
    ['/api/v1/widget/normal/demo?borderRadius=Infinity', 'borderRadius'],
    ['/api/v1/widget/normal/demo?borderWidth=-2', 'borderWidth'],
    ['/api/v1/widget/normal/demo?borderWidth=11', 'borderWidth'],
    ['/api/v1/widget/normal/demo?borderWidth=1px', 'borderWidth'],
    ['/api/v1/widget/normal/demo?playerBarStyle=wavy', 'playerBarStyle'],
    ['/api/v1/widget/normal/demo?refresh=4', 'refresh'],
    ['/api/v1/widget/normal/demo?refresh=3601', 'refresh'],
    ['/api/v1/widget/normal/demo?refresh=7.5', 'refresh'],
    ['/api/v1/widget/normal/bad%20host', 'address'],
    ['/api/v1/widget/normal/mc.observer.test?legacy=true&bedrock=true', 'legacy'],
  ])('%s is a 400 naming %s', async (url, parameter) => {
    const res = await get(url);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json();
    expect(body).toEqual({ status: 'error', error: expect.any(String), message: expect.any(String) });
    expect(body.message.toLowerCase()).toContain(parameter.toLowerCase());
    if (parameter !== 'address' && parameter !== 'legacy') expect(body.error).toBe('invalid_parameter');
  });

  it('refuses a non-public target with 400', async () => {
    // 10.0.0.0/8 is not in the test allowlist.
    const res = await get('/api/v1/widget/normal/10.1.2.3');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 'error', error: 'target_refused' });
  });

  it('is documented in the OpenAPI description', async () => {
    const doc = (await get('/api/v1/openapi.json')).json();
    const op = doc.paths['/widget/{size}/{address}'].get;
    const names = op.parameters.map((p: { name: string }) => p.name);
    for (const name of ['size', 'address', 'theme', 'customHeight', 'borderRadius', 'borderWidth', 'playerBarStyle', 'refresh', ...flags, ...colors]) {
      expect(names).toContain(name);
    }
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '429']));
  });
});

describe('/api/v1/widget/fonts/{file}', () => {
  it.each(['inter', 'roboto', 'poppins', 'montserrat', 'outfit'])('serves %s from its package, long-cached', async (font) => {
    for (const weight of [400, 700]) {
      const res = await get(`/api/v1/widget/fonts/${font}-latin-${weight}-normal.woff2`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('font/woff2');
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.rawPayload.subarray(0, 4).toString('latin1')).toBe('wOF2');
    }
  });

  it('is what the page links to', async () => {
    const page = await demo('font=Roboto');
    const urls = [...page.body.matchAll(/url\("([^"]+)"\)/g)].map((m) => new URL(m[1]!, 'http://x/api/v1/widget/normal/demo').pathname);
    expect(urls.length).toBeGreaterThan(0);
    for (const url of urls) expect((await get(url)).statusCode).toBe(200);
  });

  it.each([
    'inter-latin-400-normal.woff',
    'inter-latin-100-normal.woff2',
    'inter-latin-400-italic.woff2',
    'inter-cyrillic-400-normal.woff2',
    'comic-latin-400-normal.woff2',
    '..%2F..%2Fpackage.json',
    '..%2FLICENSE',
    'INTER-LATIN-400-NORMAL.WOFF2',
  ])('answers 404 for %s', async (file) => {
    const res = await get(`/api/v1/widget/fonts/${file}`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ status: 'error', error: 'not_found' });
  });
});
