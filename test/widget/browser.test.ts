/// <reference lib="dom" />
/**
 * The widget in real headless Chromium, inside an iframe on a page of another origin (a second
 * loopback port), against real Minecraft servers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

const INJECTION = '<img src=x onerror=alert(1)><script>alert(2)</script>';

let browser: Browser;
let app: Awaited<ReturnType<typeof buildApp>>;
let appOrigin: string;
let host: Server;
let hostOrigin: string;
let iframeSrc = '';
let injector: RunningJavaServer;
let counter: RunningJavaServer;

beforeAll(async () => {
  const config = testConfig({ RATE_LIMIT_MEDIA: '100000', RATE_LIMIT_STATUS: '100000', STATUS_CACHE_TTL: '1' });
  app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  appOrigin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  // The embedding site: another origin, serving one page with the widget in an iframe.
  host = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>fan site</title><iframe id="w" src="${iframeSrc}" width="560" height="600" style="border:0"></iframe>`);
  });
  await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
  hostOrigin = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  injector = await startJavaServer({ motd: INJECTION, onlinePlayers: 3 });
  counter = await startJavaServer({ motd: '§aCounting', onlinePlayers: 4, maxPlayers: 40 });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await new Promise<void>((resolve) => host?.close(() => resolve()));
  await injector?.close();
  await counter?.close();
});

interface Loaded {
  page: Page;
  frame: Frame;
  errors: string[];
  dialogs: string[];
  foreign: string[];
}

async function load(widgetPath: string): Promise<Loaded> {
  iframeSrc = `${appOrigin}${widgetPath}`;
  const page = await browser.newPage();
  const errors: string[] = [];
  const dialogs: string[] = [];
  const foreign: string[] = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('request', (r) => {
    const origin = new URL(r.url()).origin;
    if (origin !== appOrigin && origin !== hostOrigin && !r.url().startsWith('data:')) foreign.push(r.url());
  });
  await page.goto(`${hostOrigin}/`);
  const handle = await page.waitForSelector('#w');
  const frame = (await handle.contentFrame())!;
  await frame.waitForSelector('#w');
  await frame.evaluate(() => document.fonts.ready);
  return { page, frame, errors, dialogs, foreign };
}

const style = (frame: Frame, selector: string, property: string) =>
  frame.$eval(selector, (el, p) => getComputedStyle(el).getPropertyValue(p), property);

describe('the widget in Chromium, embedded by another origin', () => {
  it('loads without console errors and requests nothing from any other origin', async () => {
    const { page, frame, errors, foreign } = await load('/api/v1/widget/normal/demo?font=Poppins');
    expect(await frame.$eval('#w', (el) => el.getAttribute('data-state'))).toBeTruthy();
    expect(await style(frame, '#w', 'font-family')).toContain('Poppins');
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
    await page.close();
  });

  it('keeps an HTML and script injection in the MOTD as inert text', async () => {
    const { page, frame, errors, dialogs, foreign } = await load(`/api/v1/widget/normal/127.0.0.1:${injector.port}`);
    await page.waitForTimeout(300);
    expect(dialogs).toEqual([]);
    expect(await frame.$$('.w__motd img, .w__motd script')).toHaveLength(0);
    expect(await frame.$eval('.w__motd', (el) => el.textContent)).toContain(INJECTION);
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
    await page.close();
  });

  it('applies the visual parameters to the computed style', async () => {
    const dark = await load('/api/v1/widget/normal/demo');
    const light = await load('/api/v1/widget/normal/demo?theme=light');
    expect(await style(light.frame, '#w', 'background-color')).not.toBe(await style(dark.frame, '#w', 'background-color'));
    expect(await style(light.frame, '#w', 'color')).not.toBe(await style(dark.frame, '#w', 'color'));

    const custom = await load(
      '/api/v1/widget/normal/demo?bgColor=%23123456&textColor=%23fedcba&textAlign=center&showBorder=true&borderWidth=3&borderRadius=2&customHeight=150',
    );
    expect(await style(custom.frame, '#w', 'background-color')).toBe('rgb(18, 52, 86)');
    expect(await style(custom.frame, '#w', 'color')).toBe('rgb(254, 220, 186)');
    expect(await style(custom.frame, '#w', 'text-align')).toBe('center');
    expect(await style(custom.frame, '#w', 'border-top-width')).toBe('3px');
    expect(await style(custom.frame, '#w', 'border-top-left-radius')).not.toBe('0px');
    expect(await custom.frame.$eval('#w', (el) => Math.round(el.getBoundingClientRect().height))).toBe(150);

    const gradient = await load('/api/v1/widget/normal/demo?gradientBg=true&gradientFrom=%23ff0000&gradientTo=%230000ff');
    expect(await style(gradient.frame, '#w', 'background-image')).toContain('gradient');

    const hidden = await load('/api/v1/widget/normal/demo?showMotd=false&showPlayers=false');
    expect(await dark.frame.isVisible('.w__motd')).toBe(true);
    expect(await dark.frame.isVisible('.w__players')).toBe(true);
    expect(await hidden.frame.isVisible('.w__motd')).toBe(false);
    expect(await hidden.frame.isVisible('.w__players')).toBe(false);

    for (const l of [dark, light, custom, gradient, hidden]) {
      expect(l.errors).toEqual([]);
      expect(l.foreign).toEqual([]);
      await l.page.close();
    }
  });

  it('refreshes itself and picks up a change of the player count', async () => {
    counter.setOnlinePlayers(4);
    const { page, frame, errors, foreign } = await load(`/api/v1/widget/normal/127.0.0.1:${counter.port}?refresh=5`);
    expect(await frame.$eval('.w__online', (el) => el.textContent)).toBe('4');
    counter.setOnlinePlayers(17);
    await frame.waitForFunction(() => document.querySelector('.w__online')?.textContent === '17', undefined, { timeout: 20_000 });
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
    await page.close();
  }, 40_000);
});
