/// <reference lib="dom" />
/**
 * The widget in real headless Chromium, inside an iframe on a page of another origin (a second
 * loopback port), against the real status service and real Minecraft servers on loopback.
 * Every page load checks: no console error, no request outside the two loopback origins.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

const INJECTION = '<img src=x onerror=alert(1)><script>alert(2)</script>';
/** The embedding site serves the service under this path too, like a reverse proxy would. */
const PROXY_PREFIX = '/observer';

let browser: Browser;
let app: Awaited<ReturnType<typeof buildApp>>;
let appOrigin: string;
let appPort: number;
let host: Server;
let hostOrigin: string;
let injector: RunningJavaServer;
let counter: RunningJavaServer;
let leaver: RunningJavaServer;

const escapeAttribute = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

beforeAll(async () => {
  const config = testConfig({ RATE_LIMIT_MEDIA: '100000', RATE_LIMIT_STATUS: '100000', STATUS_CACHE_TTL: '1' });
  app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  appPort = (app.server.address() as AddressInfo).port;
  appOrigin = `http://127.0.0.1:${appPort}`;
  // The embedding site: another origin. `/embed?src=…` is a page with the widget in an iframe;
  // `/observer/…` forwards to the service with the prefix stripped.
  host = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://host');
    if (url.pathname.startsWith(`${PROXY_PREFIX}/`)) {
      const upstream = httpRequest(
        { host: '127.0.0.1', port: appPort, path: req.url!.slice(PROXY_PREFIX.length), method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
      return;
    }
    if (url.pathname !== '/embed') {
      res.writeHead(404).end();
      return;
    }
    const src = url.searchParams.get('src') ?? '';
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      '<!doctype html><html><head><meta charset="utf-8"><title>fan site</title><link rel="icon" href="data:,"></head>' +
        `<body style="margin:0;background:#808080"><iframe id="w" src="${escapeAttribute(src)}" width="560" height="600" style="border:0"></iframe></body></html>`,
    );
  });
  await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
  hostOrigin = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  injector = await startJavaServer({
    motd: `§c${INJECTION}`,
    onlinePlayers: 3,
    sample: [{ name: INJECTION, id: '8667ba71-b85a-4004-af54-457a9734eed7' }],
    // Whatever the server claims, only a PNG data URL may become the icon.
    favicon: 'data:text/html;base64,PHNjcmlwdD5hbGVydCg0KTwvc2NyaXB0Pg==',
    extra: { version: { name: `§a${INJECTION}`, protocol: 769 } },
  });
  counter = await startJavaServer({ motd: '§aCounting', onlinePlayers: 4, maxPlayers: 40 });
  leaver = await startJavaServer({ motd: 'Leaving soon', onlinePlayers: 2, maxPlayers: 20 });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await new Promise<void>((resolve) => (host ? host.close(() => resolve()) : resolve()));
  await injector?.close();
  await counter?.close();
  await leaver?.close();
});

interface Loaded {
  page: Page;
  frame: Frame;
  errors: string[];
  dialogs: string[];
  requests: string[];
  foreign: string[];
}

/** Opens the fan site with the widget at `src` (a path on the service, or an absolute URL). */
async function load(src: string): Promise<Loaded> {
  const page = await browser.newPage();
  const errors: string[] = [];
  const dialogs: string[] = [];
  const requests: string[] = [];
  const foreign: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('request', (r) => {
    requests.push(r.url());
    if (r.url().startsWith('data:')) return;
    const origin = new URL(r.url()).origin;
    if (origin !== appOrigin && origin !== hostOrigin) foreign.push(r.url());
  });
  const widgetUrl = src.startsWith('http') ? src : `${appOrigin}${src}`;
  await page.goto(`${hostOrigin}/embed?src=${encodeURIComponent(widgetUrl)}`);
  const handle = await page.waitForSelector('#w');
  const frame = (await handle.contentFrame())!;
  await frame.waitForSelector('#w');
  await frame.evaluate(() => document.fonts.ready);
  return { page, frame, errors, dialogs, requests, foreign };
}

/** Asserts the page stayed clean, then closes it. */
async function done(...loaded: Loaded[]): Promise<void> {
  for (const l of loaded) {
    expect(l.errors).toEqual([]);
    expect(l.dialogs).toEqual([]);
    expect(l.foreign).toEqual([]);
    await l.page.close();
  }
}

const style = (frame: Frame, selector: string, property: string) =>
  frame.$eval(selector, (el, p) => getComputedStyle(el).getPropertyValue(p), property);
const text = (frame: Frame, selector: string) => frame.$eval(selector, (el) => el.textContent ?? '');
/** Families of the web fonts the frame has loaded. */
const loadedFonts = (frame: Frame) =>
  frame.evaluate(() => {
    const families: string[] = [];
    document.fonts.forEach((f) => {
      if (f.status === 'loaded') families.push(f.family.replace(/"/g, ''));
    });
    return families;
  });
const state = (frame: Frame) => frame.$eval('#w', (el) => el.getAttribute('data-state'));

describe('the widget in Chromium, embedded by another origin', () => {
  it('loads its font from its own origin, with no console error and no request elsewhere', async () => {
    for (const font of ['Inter', 'Roboto', 'Poppins', 'Montserrat', 'Outfit']) {
      const l = await load(`/api/v1/widget/normal/demo?font=${font}`);
      expect(await style(l.frame, '#w', 'font-family')).toMatch(new RegExp(`^"?${font}"?,`));
      expect(await loadedFonts(l.frame)).toContain(font);
      expect(l.requests.some((u) => u.startsWith(`${appOrigin}/api/v1/widget/fonts/${font.toLowerCase()}-latin-`))).toBe(true);
      await done(l);
    }
  });

  it('without a font parameter, uses the system font and loads no font file', async () => {
    const l = await load('/api/v1/widget/large/demo');
    expect(await style(l.frame, '#w', 'font-family')).toMatch(/^system-ui/);
    expect(l.requests.filter((u) => u.includes('/fonts/'))).toEqual([]);
    expect(await state(l.frame)).toBe('online');
    expect(await text(l.frame, '.w__name')).toBe('play.example.com');
    await done(l);
  });

  it('keeps HTML and script injections from the server as inert, visible text', async () => {
    const l = await load(`/api/v1/widget/large/127.0.0.1:${injector.port}`);
    // Once the icon has loaded or failed, any handler a server text could have planted has run.
    await l.frame.waitForFunction(() => (document.querySelector('.w__icon') as HTMLImageElement | null)?.complete === true);
    expect(await l.frame.$$('img:not(.w__icon)')).toHaveLength(0);
    expect(await l.frame.$$('script')).toHaveLength(1);
    // The MOTD keeps its colour, as text.
    expect(await text(l.frame, '.w__motd-text')).toBe(INJECTION);
    expect(await style(l.frame, '.w__motd-text span', 'color')).toBe('rgb(255, 85, 85)');
    expect(await l.frame.isVisible('.w__motd-text')).toBe(true);
    expect(await text(l.frame, '.w__version')).toBe(INJECTION);
    // Player names are cut to 32 characters.
    expect(await text(l.frame, '.w__sample li')).toBe(INJECTION.slice(0, 32));
    // A favicon that is not a PNG data URL is replaced by the default icon.
    expect(await l.frame.$eval('.w__icon', (el) => el.getAttribute('src'))).toMatch(/^data:image\/svg\+xml,/);
    await done(l);
  });

  it('applies theme, colours, alignment, border, radius and height to the computed style', async () => {
    const dark = await load('/api/v1/widget/normal/demo');
    const light = await load('/api/v1/widget/normal/demo?theme=light');
    expect(await style(dark.frame, '#w', 'background-color')).toBe('rgb(17, 24, 39)');
    expect(await style(light.frame, '#w', 'background-color')).toBe('rgb(255, 255, 255)');
    expect(await style(light.frame, '#w', 'color')).not.toBe(await style(dark.frame, '#w', 'color'));
    // Defaults: no border, 0.75 rem corners, the size's height, left-aligned.
    expect(await style(dark.frame, '#w', 'border-top-style')).toBe('none');
    expect(await style(dark.frame, '#w', 'border-top-left-radius')).toBe('12px');
    expect(await style(dark.frame, '#w', 'text-align')).toBe('left');
    expect(await dark.frame.$eval('#w', (el) => el.getBoundingClientRect().height)).toBe(180);

    const custom = await load(
      '/api/v1/widget/normal/demo?bgColor=%23123456&textColor=fedcba&textAlign=center&showBorder=true&borderWidth=3&borderRadius=2&customHeight=150px',
    );
    expect(await style(custom.frame, '#w', 'background-color')).toBe('rgb(18, 52, 86)');
    expect(await style(custom.frame, '#w', 'color')).toBe('rgb(254, 220, 186)');
    expect(await style(custom.frame, '#w', 'text-align')).toBe('center');
    expect(await style(custom.frame, '.w__name', 'text-align')).toBe('center');
    expect(await style(custom.frame, '#w', 'border-top-width')).toBe('3px');
    expect(await style(custom.frame, '#w', 'border-top-style')).toBe('solid');
    expect(await style(custom.frame, '#w', 'border-top-left-radius')).toBe('32px');
    expect(await custom.frame.$eval('#w', (el) => el.getBoundingClientRect().height)).toBe(150);
    expect(await custom.frame.evaluate(() => document.documentElement.getBoundingClientRect().height)).toBe(150);

    const right = await load('/api/v1/widget/small/demo?textAlign=right&customHeight=60');
    expect(await style(right.frame, '.w__meta', 'text-align')).toBe('right');
    expect(await right.frame.$eval('#w', (el) => el.getBoundingClientRect().height)).toBe(60);

    const gradient = await load('/api/v1/widget/normal/demo?gradientBg=true&gradientFrom=%23ff0000&gradientTo=00f');
    expect(await style(gradient.frame, '#w', 'background-image')).toBe('linear-gradient(135deg, rgb(255, 0, 0), rgb(0, 0, 255))');
    const themed = await load('/api/v1/widget/normal/demo?gradientBg=true');
    expect(await style(themed.frame, '#w', 'background-image')).toMatch(/^linear-gradient\(135deg, /);
    await done(dark, light, custom, right, gradient, themed);
  });

  it('applies state colours and the status indicator styles', async () => {
    const dot = await load('/api/v1/widget/normal/demo?onlineColor=%2300ff00');
    expect(await style(dot.frame, '.w__dot', 'background-color')).toBe('rgb(0, 255, 0)');
    expect(await dot.frame.isVisible('.w__label')).toBe(true);
    expect(await style(dot.frame, '.w__fill', 'background-color')).toBe('rgb(0, 255, 0)');

    const offline = await load('/api/v1/widget/normal/127.0.0.1:1?offlineColor=ff8800&statusIndicator=text');
    expect(await state(offline.frame)).toBe('offline');
    expect(await text(offline.frame, '.w__label')).toBe('Offline');
    expect(await style(offline.frame, '.w__label', 'color')).toBe('rgb(255, 136, 0)');
    expect(await offline.frame.isVisible('.w__dot')).toBe(false);
    expect(await text(offline.frame, '.w__error')).toBe('connection refused');
    expect(await style(offline.frame, '.w__icon', 'filter')).toBe('grayscale(1)');

    const badge = await load('/api/v1/widget/normal/demo?statusIndicator=badge&onlineColor=%23ff0000');
    expect(await style(badge.frame, '.w__status', 'background-color')).toMatch(/^(color\(srgb 1 0 0 \/ 0\.14\)|rgba\(255, 0, 0, 0\.14\))$/);
    expect(await style(badge.frame, '.w__status', 'color')).toBe('rgb(255, 0, 0)');
    expect(await style(badge.frame, '.w__status', 'border-top-left-radius')).toBe('999px');

    const none = await load('/api/v1/widget/normal/demo?statusIndicator=none');
    expect(await none.frame.$('.w__status')).toBeNull();
    await done(dot, offline, badge, none);
  });

  it('sizes the icon and shows or hides each field', async () => {
    const widths: number[] = [];
    for (const iconSize of ['small', 'medium', 'large']) {
      const l = await load(`/api/v1/widget/normal/demo?iconSize=${iconSize}`);
      widths.push(await l.frame.$eval('.w__icon', (el) => el.getBoundingClientRect().width));
      // The 16 px demo icon is enlarged: nearest-neighbour, not blurred.
      expect(await style(l.frame, '.w__icon', 'image-rendering')).toBe('pixelated');
      await done(l);
    }
    expect(widths).toEqual([36, 48, 60]);

    const all = await load('/api/v1/widget/large/demo?showProtocol=true');
    for (const selector of ['.w__icon', '.w__version', '.w__protocol', '.w__latency', '.w__motd', '.w__players', '.w__sample']) {
      expect(await all.frame.isVisible(selector), selector).toBe(true);
    }
    expect(await text(all.frame, '.w__protocol')).toBe('Protocol 769');
    expect(await text(all.frame, '.w__ms')).toBe('42 ms');
    expect(await text(all.frame, '.w__version')).toBe('Paper 1.21.4');
    const none = await load(
      '/api/v1/widget/large/demo?showFavicon=false&showVersion=false&showLatency=false&showMotd=false&showPlayers=false',
    );
    for (const selector of ['.w__icon', '.w__version', '.w__protocol', '.w__latency', '.w__motd', '.w__players', '.w__sample', '.w__bar']) {
      expect(await none.frame.isVisible(selector), selector).toBe(false);
    }
    expect(await none.frame.isVisible('.w__name')).toBe(true);
    await done(all, none);
  });

  it('applies the player bar styles and the effects', async () => {
    const plain = await load('/api/v1/widget/normal/demo');
    expect(await style(plain.frame, '.w__fill', 'background-image')).toBe('none');
    expect(await style(plain.frame, '#w', 'box-shadow')).not.toMatch(/4px 10px|8px 1px/);
    expect(await plain.frame.$eval('.w__fill', (el) => (el as HTMLElement).style.width)).toBe('25.6%');

    const gradient = await load('/api/v1/widget/normal/demo?playerBarStyle=gradient');
    expect(await style(gradient.frame, '.w__fill', 'background-image')).toMatch(/^linear-gradient\(90deg, /);
    const striped = await load('/api/v1/widget/normal/demo?playerBarStyle=striped');
    expect(await style(striped.frame, '.w__fill', 'background-image')).toMatch(/^linear-gradient\(45deg, /);
    expect(await style(striped.frame, '.w__fill', 'animation-name')).toBe('none');
    const animated = await load('/api/v1/widget/normal/demo?playerBarStyle=animated');
    expect(await style(animated.frame, '.w__fill', 'animation-name')).toBe('w-stripes');

    const shadow = await load('/api/v1/widget/normal/demo?boxShadow=true');
    expect(await style(shadow.frame, '#w', 'box-shadow')).toMatch(/rgba\(0, 0, 0, 0\.5\) 0px 4px 10px -3px/);
    // The card shrinks inside the frame so that the shadow is not cut off.
    expect(await shadow.frame.$eval('#w', (el) => el.getBoundingClientRect().height)).toBe(180 - 16);
    const glow = await load('/api/v1/widget/normal/demo?glowEffect=true&onlineColor=%230000ff');
    expect(await style(glow.frame, '#w', 'box-shadow')).toMatch(/0px 0px 8px 1px/);
    expect(await style(glow.frame, '#w', 'box-shadow')).toMatch(/(srgb 0 0 1|0, 0, 255)/);

    const hover = await load('/api/v1/widget/normal/demo?hoverEffect=true');
    expect(await style(hover.frame, '#w', 'transform')).toBe('none');
    await hover.frame.hover('#w');
    await hover.frame.waitForFunction(() => getComputedStyle(document.getElementById('w')!).transform === 'matrix(1, 0, 0, 1, 0, -2)');
    await plain.frame.hover('#w');
    expect(await style(plain.frame, '#w', 'transform')).toBe('none');
    await done(plain, gradient, striped, animated, shadow, glow, hover);
  });

  it('refreshes itself: player count and MOTD, rebuilt as text with the exact colours the JSON shows', async () => {
    counter.setOnlinePlayers(4);
    counter.setMotd('§aCounting');
    const l = await load(`/api/v1/widget/normal/127.0.0.1:${counter.port}?refresh=5`);
    expect(await text(l.frame, '.w__online')).toBe('4');
    expect(await text(l.frame, '.w__max')).toBe('40');
    expect(await l.frame.$eval('.w__fill', (el) => (el as HTMLElement).style.width)).toBe('10%');
    counter.setOnlinePlayers(17);
    // A BungeeCord hex colour (§x§f§f§8§8§0§0): the JSON's segments carry #ff8800, not a named colour.
    counter.setMotd(`§x§f§f§8§8§0§0Now §lamber ${INJECTION}`);
    await l.frame.waitForFunction(() => document.querySelector('.w__online')?.textContent === '17', undefined, { timeout: 20_000 });
    await l.frame.waitForFunction(() => document.querySelector('.w__motd-text')?.textContent?.startsWith('Now'), undefined, { timeout: 10_000 });
    expect(await l.frame.$eval('.w__fill', (el) => (el as HTMLElement).style.width)).toBe('42.5%');
    expect(await text(l.frame, '.w__motd-text')).toBe(`Now amber ${INJECTION}`);
    expect(await l.frame.$$('.w__motd-text img, .w__motd-text script')).toHaveLength(0);
    const spans = await l.frame.$$eval('.w__motd-text span', (els) =>
      els.map((el) => ({ text: el.textContent, color: getComputedStyle(el).color, weight: getComputedStyle(el).fontWeight })),
    );
    expect(spans[0]).toEqual({ text: 'Now ', color: 'rgb(255, 136, 0)', weight: '400' });
    expect(spans[1]).toMatchObject({ color: 'rgb(255, 136, 0)', weight: '700' });
    // Every refresh went to the service's own origin.
    expect(l.requests.filter((u) => u.startsWith(`${appOrigin}/api/v1/status/127.0.0.1%3A${counter.port}`)).length).toBeGreaterThan(0);
    await done(l);
  }, 45_000);

  it('shows the stale state, then the offline state, when the server goes away', async () => {
    const l = await load(`/api/v1/widget/normal/127.0.0.1:${leaver.port}?refresh=5&statusIndicator=badge`);
    expect(await state(l.frame)).toBe('online');
    expect(await text(l.frame, '.w__online')).toBe('2');
    const online = await style(l.frame, '.w__status', 'color');
    await leaver.close();
    // The first look-up after the 1 s TTL serves the last success (stale) while it re-pings.
    await l.frame.waitForFunction(() => document.getElementById('w')?.getAttribute('data-state') === 'stale', undefined, { timeout: 15_000 });
    expect(await text(l.frame, '.w__label')).toBe('Cached');
    expect(await style(l.frame, '.w__status', 'color')).toBe('rgb(245, 158, 11)');
    expect(await style(l.frame, '.w__status', 'color')).not.toBe(online);
    expect(await text(l.frame, '.w__online')).toBe('2');
    await l.frame.waitForFunction(() => document.getElementById('w')?.getAttribute('data-state') === 'offline', undefined, { timeout: 15_000 });
    expect(await text(l.frame, '.w__label')).toBe('Offline');
    expect(await style(l.frame, '.w__status', 'color')).toBe('rgb(239, 68, 68)');
    expect(await text(l.frame, '.w__online')).toBe('\u2014');
    expect(await text(l.frame, '.w__motd-text')).toBe('Server offline');
    expect(await text(l.frame, '.w__error')).toBe('connection refused');
    expect(await l.frame.isVisible('.w__version')).toBe(false);
    await done(l);
  }, 45_000);

  it('refreshes through the path it was served under, behind a reverse proxy', async () => {
    const l = await load(`${hostOrigin}${PROXY_PREFIX}/api/v1/widget/small/127.0.0.1:${counter.port}?refresh=5&font=Outfit`);
    // Stale when the previous test's check of this server is past its 1 s TTL.
    expect(await state(l.frame)).toMatch(/^(online|stale)$/);
    expect(await loadedFonts(l.frame)).toContain('Outfit');
    await l.page.waitForRequest((r) => r.url().startsWith(`${hostOrigin}${PROXY_PREFIX}/api/v1/status/`), { timeout: 15_000 });
    expect(l.requests.filter((u) => u.startsWith(appOrigin))).toEqual([]);
    await done(l);
  }, 30_000);
});
