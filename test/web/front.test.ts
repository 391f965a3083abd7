/// <reference lib="dom" />
/**
 * The web front in real headless Chromium against the whole service (SQLite store, status
 * service) and real Minecraft servers on loopback: look-ups by keyboard, shareable URLs,
 * hostile server text, offline and invalid addresses, the embed builder, the history chart,
 * axe-core, and the page-weight budget. Every page checks: no console error, no request to
 * another origin.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { expectClean, launchBrowser, open, startFront, type Front, type Opened } from './harness.js';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const INJECTION = '<img src=x onerror=alert(1)><script>alert(2)</script>';
const KIB = 1024;

let browser: Browser;
let front: Front;
let good: RunningJavaServer;
let hostile: RunningJavaServer;
let closedPort: number;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  good = await startJavaServer({
    motd: '§aA §lfriendly§r §6server\n§bSecond line',
    onlinePlayers: 3,
    maxPlayers: 20,
    sample: [
      { name: 'Steve', id: '8667ba71-b85a-4004-af54-457a9734eed7' },
      { name: 'Alex', id: 'ec561538-f3fd-461d-aff5-086b22154bce' },
    ],
  });
  hostile = await startJavaServer({
    motd: `§c${INJECTION}`,
    onlinePlayers: 1,
    sample: [{ name: INJECTION, id: '8667ba71-b85a-4004-af54-457a9734eed7' }],
    extra: { version: { name: INJECTION, protocol: 769 } },
  });
  closedPort = await freePort();
  // A one-second cache: every look-up after a second is a new check for the chart.
  front = await startFront({ STATUS_CACHE_TTL: '1' });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await front?.close();
  await good?.close();
  await hostile?.close();
});

const goodAddress = () => `127.0.0.1:${good.port}`;
const text = (o: Opened, selector: string) => o.page.locator(selector).first().innerText();
/** The value of a fact of the card (`Players`, `Version`, …). */
const fact = (o: Opened, term: string) => o.page.locator('.fact', { has: o.page.locator('dt', { hasText: term }) }).locator('dd').innerText();

async function expectGoodCard(o: Opened): Promise<void> {
  await o.page.waitForSelector('.card');
  expect(await o.page.locator('.card').getAttribute('data-state')).toBe('online');
  expect(await text(o, '.state')).toBe('Online');
  expect(await text(o, '.motd')).toBe('A friendly server\nSecond line');
  // The MOTD keeps its colours and styles (§a green, §l bold).
  expect(await o.page.locator('.motd span').first().evaluate((el) => getComputedStyle(el).color)).toBe('rgb(85, 255, 85)');
  expect(await o.page.locator('.motd span', { hasText: 'friendly' }).evaluate((el) => getComputedStyle(el).fontWeight)).toBe('700');
  expect(await fact(o, 'Players')).toBe('3 / 20');
  expect(await fact(o, 'Version')).toMatch(/^1\.\d+/);
  expect(await fact(o, 'Latency')).toMatch(/^\d+ ms$/);
  expect(await o.page.locator('.names li').allInnerTexts()).toEqual(['Steve', 'Alex']);
  expect(await text(o, '.server-name')).toBe(goodAddress());
}

describe('looking a server up', () => {
  it('typing an address and pressing Enter shows the card at a shareable URL that loads the same card', async () => {
    const o = await open(browser, front, '/');
    await o.page.locator('#address').fill(goodAddress());
    await o.page.locator('#address').press('Enter');
    await expectGoodCard(o);
    const shared = o.page.url();
    expect(shared).toBe(`${front.origin}/server/${encodeURIComponent(goodAddress())}`);
    expect(await o.page.title()).toContain(goodAddress());
    await expectClean(o);
    await o.close();

    const direct = await open(browser, front, new URL(shared).pathname);
    await expectGoodCard(direct);
    expect(await direct.page.locator('#address').inputValue()).toBe(goodAddress());
    await expectClean(direct);
    await direct.close();
  });

  it('the edition choice goes into the URL (?bedrock, ?legacy) and back into the form', async () => {
    const o = await open(browser, front, '/');
    await o.page.locator('#address').fill(goodAddress());
    await o.page.locator('#edition').selectOption('legacy');
    await o.page.locator('#address').press('Enter');
    await o.page.waitForSelector('.card');
    expect(o.page.url()).toBe(`${front.origin}/server/${encodeURIComponent(goodAddress())}?legacy`);
    expect(await fact(o, 'Edition')).toBe('Java (legacy ping)');
    await o.page.goBack();
    await o.page.waitForSelector('#trends-title');
    expect(await o.page.locator('#address').inputValue()).toBe('');
    await o.close();

    const bedrock = await open(browser, front, `/server/${encodeURIComponent(goodAddress())}?bedrock`);
    await bedrock.page.waitForSelector('.card');
    expect(await bedrock.page.locator('#edition').inputValue()).toBe('bedrock');
    expect(await fact(bedrock, 'Edition')).toBe('Bedrock');
    await bedrock.close();
  });

  it('keeps a hostile MOTD, version and player names as inert text', async () => {
    const dialogs: string[] = [];
    const o = await open(browser, front, `/server/127.0.0.1:${hostile.port}`);
    o.page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await o.page.waitForSelector('.card');
    await o.page.waitForTimeout(300);
    expect(await text(o, '.motd')).toBe(INJECTION);
    expect(await o.page.locator('.motd span').first().evaluate((el) => getComputedStyle(el).color)).toBe('rgb(255, 85, 85)');
    expect(await fact(o, 'Version')).toBe(INJECTION);
    expect(await o.page.locator('.names li').allInnerTexts()).toEqual([INJECTION]);
    // Nothing from the server became an element: one image (the icon) in the card, no script.
    expect(await o.page.locator('.card img').count()).toBe(1);
    expect(await o.page.locator('.card script, .card [onerror]').count()).toBe(0);
    expect(await o.page.locator('script').count()).toBe(1);
    expect(dialogs).toEqual([]);
    await expectClean(o);
    await o.close();
  });

  it('an offline server says Offline, with the reason', async () => {
    const o = await open(browser, front, `/server/127.0.0.1:${closedPort}`);
    await o.page.waitForSelector('.card');
    expect(await o.page.locator('.card').getAttribute('data-state')).toBe('offline');
    expect(await text(o, '.state')).toBe('Offline');
    expect(await fact(o, 'Reason')).toBe('connection refused');
    expect(await fact(o, 'Players')).toBe('–');
    await expectClean(o);
    await o.close();
  });

  it('an invalid address shows the reason in a role="alert" region, typed or loaded', async () => {
    const o = await open(browser, front, '/');
    await o.page.locator('#address').fill('not a host!');
    await o.page.locator('#address').press('Enter');
    const alert = o.page.getByRole('alert');
    await expect.poll(() => alert.innerText()).toMatch(/address/i);
    expect(await o.page.locator('.card').count()).toBe(0);
    // The API's 400 is expected here; Chromium logs failed fetches as console errors.
    expect(o.errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
    await o.close();

    const direct = await open(browser, front, `/server/${encodeURIComponent('0x7f.1')}`);
    await expect.poll(() => direct.page.getByRole('alert').innerText()).not.toBe('');
    expect(await direct.page.locator('.card').count()).toBe(0);
    await direct.close();

    const empty = await open(browser, front, '/');
    await empty.page.locator('#address').press('Enter');
    expect(await empty.page.getByRole('alert').innerText()).toMatch(/Type a server address/);
    expect(empty.page.url()).toBe(`${front.origin}/`);
    await empty.close();
  });
});

describe('keyboard only', () => {
  it('Tab reaches the address box, Enter looks it up, the range buttons and copy buttons work by keyboard', async () => {
    const o = await open(browser, front, '/', { permissions: ['clipboard-read', 'clipboard-write'] });
    let tabs = 0;
    while ((await o.page.evaluate(() => document.activeElement?.id)) !== 'address') {
      await o.page.keyboard.press('Tab');
      tabs += 1;
      expect(tabs).toBeLessThan(10);
    }
    await o.page.keyboard.type(goodAddress());
    await o.page.keyboard.press('Enter');
    await expectGoodCard(o);
    await o.page.waitForSelector('.chart, .chart-body .empty');

    // The "7 days" range by keyboard: focus moves there by Tab, Enter presses it.
    const week = o.page.locator('button.range', { hasText: '7 days' });
    for (let i = 0; i < 40 && !(await week.evaluate((el) => el === document.activeElement)); i++) await o.page.keyboard.press('Tab');
    await o.page.keyboard.press('Enter');
    await expect.poll(() => week.getAttribute('aria-pressed')).toBe('true');

    // The first copy button, by keyboard.
    const copy = o.page.locator('button.copy').first();
    for (let i = 0; i < 80 && !(await copy.evaluate((el) => el === document.activeElement)); i++) await o.page.keyboard.press('Tab');
    expect(await copy.evaluate((el) => el === document.activeElement)).toBe(true);
    await o.page.keyboard.press('Enter');
    await expect.poll(() => o.page.getByRole('status').innerText()).toMatch(/copied/);
    const snippet = await o.page.locator('textarea[data-snippet="iframe"]').inputValue();
    expect(await o.page.evaluate(() => navigator.clipboard.readText())).toBe(snippet);
    await expectClean(o);
    await o.close();
  });
});

describe('the embed builder', () => {
  it('snippets follow the options, the previews follow, and every snippet URL answers with the right type', async () => {
    const o = await open(browser, front, `/server/${encodeURIComponent(goodAddress())}`);
    await o.page.waitForSelector('.builder');
    const snippet = (key: string) => o.page.locator(`textarea[data-snippet="${key}"]`).inputValue();
    const address = encodeURIComponent(goodAddress());

    expect(await snippet('widget-url')).toBe(`${front.origin}/api/v1/widget/normal/${address}`);
    expect(await snippet('iframe')).toBe(
      `<iframe src="${front.origin}/api/v1/widget/normal/${address}" width="420" height="180" style="border:0" title="${goodAddress()} server status" loading="lazy"></iframe>`,
    );
    expect(await snippet('banner-url')).toBe(`${front.origin}/api/v1/banner/${address}`);

    // Widget options: size, theme, font, colour, height, booleans, effects.
    const widget = o.page.locator('.builder-part').nth(0);
    await widget.getByLabel('Size', { exact: true }).selectOption('large');
    await widget.getByLabel('Theme', { exact: true }).selectOption('light');
    await widget.getByLabel('Font', { exact: true }).selectOption('Inter');
    await widget.getByLabel('Background', { exact: true }).fill('#123');
    await widget.getByLabel(/^Custom height/).fill('300');
    await widget.getByLabel('Protocol number', { exact: true }).check();
    await widget.getByLabel('Players', { exact: true }).uncheck();
    await widget.getByLabel(/^Corner radius/).fill('2');
    await widget.getByLabel(/^Refresh every/).fill('30');
    await widget.getByLabel('Glow', { exact: true }).check();
    await widget.getByLabel('Status indicator', { exact: true }).selectOption('badge');
    const widgetUrl = await snippet('widget-url');
    const params = new URL(widgetUrl).searchParams;
    expect(new URL(widgetUrl).pathname).toBe(`/api/v1/widget/large/${address}`);
    expect(Object.fromEntries(params)).toEqual({
      theme: 'light',
      font: 'Inter',
      bgColor: '#112233',
      customHeight: '300',
      showProtocol: 'true',
      showPlayers: 'false',
      borderRadius: '2',
      refresh: '30',
      glowEffect: 'true',
      statusIndicator: 'badge',
    });
    expect(await snippet('iframe')).toContain('width="560" height="300"');
    expect(await snippet('iframe')).toContain(widgetUrl.replace(/&/g, '&amp;'));
    // An invalid colour is flagged and left out.
    await widget.getByLabel('Text', { exact: true }).fill('#12345');
    expect(await widget.getByLabel('Text', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await snippet('widget-url')).toBe(widgetUrl);
    // The live preview follows.
    await expect.poll(() => o.page.locator('iframe.widget-preview').getAttribute('src')).toBe(widgetUrl);
    const frame = o.page.frameLocator('iframe.widget-preview');
    await expect.poll(() => frame.locator('#w').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(17, 34, 51)');

    // Banner options.
    const banner = o.page.locator('.builder-part').nth(1);
    await banner.getByLabel('Size', { exact: true }).selectOption('large');
    await banner.getByLabel('Style', { exact: true }).selectOption('classic');
    await banner.getByLabel('Accent colour', { exact: true }).fill('f0a');
    await banner.getByLabel('Latency', { exact: true }).uncheck();
    const bannerUrl = await snippet('banner-url');
    expect(Object.fromEntries(new URL(bannerUrl).searchParams)).toEqual({
      size: 'large',
      style: 'classic',
      accentColor: '#ff00aa',
      showPing: 'false',
    });
    expect(await snippet('img')).toContain(`<img src="${bannerUrl.replace(/&/g, '&amp;')}" alt="${goodAddress()} server status" width="800" height="240">`);
    expect(await snippet('markdown')).toContain(`![${goodAddress()} server status](${bannerUrl})`);
    expect(await snippet('bbcode')).toContain(`[img]${bannerUrl}[/img]`);
    await o.page.locator('img.banner-preview').scrollIntoViewIfNeeded();
    await expect.poll(() => o.page.locator('img.banner-preview').getAttribute('src')).toBe(bannerUrl);
    await expect.poll(() => o.page.locator('img.banner-preview').evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBe(800);

    // Every URL a snippet hands out answers 200 with the right content type.
    const urls: Array<[string, RegExp]> = [
      [widgetUrl, /^text\/html/],
      [bannerUrl, /^image\/png$/],
      [await snippet('status-url'), /^application\/json/],
      [await snippet('icon-url'), /^image\/png$/],
      [await snippet('page-url'), /^text\/html/],
    ];
    for (const [url, type] of urls) {
      expect(new URL(url).origin).toBe(front.origin);
      const response = await fetch(url);
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-type'), url).toMatch(type);
    }
    await expectClean(o);
    await o.close();
  });
});

describe('the history chart', () => {
  it('after a few checks, draws an accessible SVG whose label states the figures, per range', async () => {
    const address = `127.0.0.1:${good.port}`;
    // Three checks a second apart (the cache lives one second), with changing player counts.
    for (const players of [2, 6, 4]) {
      good.setOnlinePlayers(players);
      const response = await fetch(`${front.origin}/api/v1/status/${address}`);
      expect((await response.json()) as { online: boolean }).toMatchObject({ online: true });
      await new Promise((resolve) => setTimeout(resolve, 1100));
    }
    good.setOnlinePlayers(3);
    await front.store.flush();
    const o = await open(browser, front, `/server/${encodeURIComponent(address)}`);
    const chart = o.page.locator('svg.chart');
    await chart.waitFor();
    expect(await chart.getAttribute('role')).toBe('img');
    const label = (await chart.getAttribute('aria-label')) ?? '';
    const checks = Number(/\((\d+) checks/.exec(label)?.[1]);
    expect(checks).toBeGreaterThanOrEqual(3);
    expect(label).toMatch(/^Uptime 100% over the last 24 hours \(\d+ checks, \d+ online\); players: average [\d.]+, peak [3-6]\.$/);
    expect(Number(/peak (\d+)/.exec(label)?.[1])).toBeGreaterThanOrEqual(6);
    expect(await o.page.locator('.figures').innerText()).toBe(label);
    // Bars for the buckets: 144 over 24 hours, at least one online.
    expect(await chart.locator('rect.bar').count()).toBe(144);
    expect(await chart.locator('rect.bar.up').count()).toBeGreaterThanOrEqual(1);

    await o.page.getByRole('button', { name: '30 days' }).click();
    await expect.poll(() => chart.getAttribute('aria-label')).toMatch(/over the last 30 days/);
    expect(await o.page.locator('svg.chart rect.bar').count()).toBe(180);
    await expectClean(o);
    await o.close();
  });
});

describe('accessibility (axe-core)', () => {
  for (const scheme of ['light', 'dark'] as const) {
    for (const path of ['/', 'server']) {
      it(`${path === '/' ? '/' : '/server/…'} in ${scheme}: no serious or critical violation`, async () => {
        // bypassCSP only lets the test inject axe-core's own script into the page.
        const o = await open(browser, front, path === '/' ? '/' : `/server/${encodeURIComponent(goodAddress())}`, {
          colorScheme: scheme,
          bypassCSP: true,
        });
        await o.page.waitForSelector(path === '/' ? '.figures-grid, #stats-title + div p' : '.chart, .chart-body .empty');
        await o.page.waitForLoadState('networkidle');
        await o.page.addScriptTag({ content: AXE_SOURCE });
        const violations = await o.page.evaluate(async () => {
          const axe = (window as unknown as { axe: { run: (c: Document, o: object) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }> } }).axe;
          const result = await axe.run(document, { iframes: false, resultTypes: ['violations'] });
          return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
        });
        expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
        expect(await o.page.evaluate(() => document.documentElement.lang)).toBe('en');
        expect(await o.page.title()).not.toBe('');
        await o.close();
      });
    }
  }
});

describe('page weight', () => {
  for (const path of ['/', 'server']) {
    it(`one view of ${path === '/' ? '/' : '/server/…'} moves at most 250 KiB, scrolled to the end; the app's JS is under 50 KiB gzipped`, async () => {
      const o = await open(browser, front, path === '/' ? '/' : `/server/${encodeURIComponent(goodAddress())}`);
      await o.page.waitForLoadState('networkidle');
      // Scroll to the end so that lazy previews load too.
      await o.page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
      await o.page.waitForTimeout(800);
      await o.page.waitForLoadState('networkidle');
      const sizes = await Promise.all(o.responses.map(async (r) => ({ url: r.url, type: r.type, bytes: await r.bytes })));
      const total = sizes.reduce((sum, r) => sum + r.bytes, 0);
      console.log(`page weight ${path}: ${(total / KIB).toFixed(1)} KiB in ${sizes.length} responses`);
      for (const r of sizes) console.log(`  ${(r.bytes / KIB).toFixed(1)} KiB ${r.type} ${r.url.replace(front.origin, '')}`);
      expect(total).toBeGreaterThan(0);
      expect(total).toBeLessThanOrEqual(250 * KIB);
      const js = sizes.filter((r) => r.type.startsWith('text/javascript'));
      expect(js).toHaveLength(1);
      expect(js[0]!.bytes).toBeLessThanOrEqual(50 * KIB);
      await expectClean(o);
      await o.close();
    });
  }
});
