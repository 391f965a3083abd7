import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';

let app: Awaited<ReturnType<typeof buildApp>>;
beforeAll(async () => {
  const config = testConfig({ RATE_LIMIT_MEDIA: '100000' });
  app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.ready();
});
afterAll(async () => {
  await app.close();
});
const get = (url: string) => app.inject({ method: 'GET', url });

describe('/api/v1/widget/{size}/{address}', () => {
  it.each(['small', 'normal', 'large'])('renders the %s demo as one self-contained, embeddable page', async (size) => {
    const res = await get(`/api/v1/widget/${size}/demo`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['x-frame-options']).toBeUndefined();
    expect(res.headers['cache-control']).toBe('public, max-age=60, stale-while-revalidate=300');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain('frame-ancestors *');
    expect(csp).not.toMatch(/https?:\/\//);
    // No script, style or font from another origin.
    expect(res.body).not.toMatch(/(src|href)="(https?:)?\/\//);
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    for (const tag of res.body.match(/<script[^>]*>/g) ?? []) expect(tag).toContain(`nonce="${nonce}"`);
  });

  it('serves its fonts itself, long-cached', async () => {
    const res = await get('/api/v1/widget/normal/demo?font=Roboto');
    const font = /url\((?:"|')?([^)"']+\.woff2)/.exec(res.body)?.[1];
    expect(font).toBeTruthy();
    const file = await get(new URL(font!, 'http://x/api/v1/widget/normal/').pathname);
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('font/woff2');
    expect(file.headers['cache-control']).toContain('immutable');
    expect((await get('/api/v1/widget/fonts/..%2F..%2Fpackage.json')).statusCode).toBeGreaterThanOrEqual(400);
  });

  it.each([
    ['/api/v1/widget/medium/demo', 'size'],
    ['/api/v1/widget/normal/demo?theme=purple', 'theme'],
    ['/api/v1/widget/normal/demo?showPlayers=perhaps', 'showPlayers'],
    ['/api/v1/widget/normal/demo?bgColor=red', 'bgColor'],
    ['/api/v1/widget/normal/demo?textColor=%2312', 'textColor'],
    ['/api/v1/widget/normal/demo?onlineColor=%23zzzzzz', 'onlineColor'],
    ['/api/v1/widget/normal/demo?offlineColor=1234567', 'offlineColor'],
    ['/api/v1/widget/normal/demo?gradientFrom=blue', 'gradientFrom'],
    ['/api/v1/widget/normal/demo?gradientTo=%23ff', 'gradientTo'],
    ['/api/v1/widget/normal/demo?statusIndicator=blink', 'statusIndicator'],
    ['/api/v1/widget/normal/demo?iconSize=huge', 'iconSize'],
    ['/api/v1/widget/normal/demo?font=Comic%20Sans', 'font'],
    ['/api/v1/widget/normal/demo?textAlign=justify', 'textAlign'],
    ['/api/v1/widget/normal/demo?customHeight=49', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=601', 'customHeight'],
    ['/api/v1/widget/normal/demo?customHeight=12em', 'customHeight'],
    ['/api/v1/widget/normal/demo?borderRadius=-1', 'borderRadius'],
    ['/api/v1/widget/normal/demo?borderRadius=abc', 'borderRadius'],
    ['/api/v1/widget/normal/demo?borderWidth=-2', 'borderWidth'],
    ['/api/v1/widget/normal/demo?playerBarStyle=wavy', 'playerBarStyle'],
    ['/api/v1/widget/normal/demo?glowEffect=2', 'glowEffect'],
    ['/api/v1/widget/normal/bad%20host', 'address'],
    ['/api/v1/widget/normal/mc.observer.test?legacy=true&bedrock=true', 'legacy'],
  ])('%s is a 400 naming %s', async (url, parameter) => {
    const res = await get(url);
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({ status: 'error' });
    expect(body.message).toContain(parameter);
  });

  it.each(['120', '120px', '50', '600'])('accepts customHeight=%s', async (value) => {
    const res = await get(`/api/v1/widget/normal/demo?customHeight=${value}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`${parseInt(value, 10)}px`);
  });
});
