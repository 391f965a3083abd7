/// <reference lib="dom" />
/**
 * The web front in real headless Chromium against the whole service (SQLite store, status
 * service) and real Minecraft servers on loopback: look-ups by keyboard, shareable URLs,
 * hostile server text, offline and invalid addresses, the embed builder, the history chart,
 * axe-core, and the page-weight budget. Every page checks: no console error, no request to
 * another origin.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startSilentServer } from '../support/hostile.js';
import { freePort } from '../../scripts/ports.mjs';
import { expectClean, launchBrowser, open, seriousViolations, settled, startFront, tearDown, type Front, type Opened } from './harness.js';

const INJECTION = '<img src=x onerror=alert(1)><script>alert(2)</script>';
const KIB = 1024;

let browser: Browser;
let front: Front;
let good: RunningJavaServer;
let hostile: RunningJavaServer;
let darkMotd: RunningJavaServer;
let closedPort: number;
let silent: Awaited<ReturnType<typeof startSilentServer>>;

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
  // Minecraft's dark colours, which the dark MOTD panel must still show readably.
  darkMotd = await startJavaServer({ motd: '§0Black §1Dark blue §8Dark gray §4Dark red §5Purple\n§2Green §3Aqua §6Gold §7Gray', onlinePlayers: 1 });
  closedPort = await freePort();
  silent = await startSilentServer();
  // A one-second cache: every look-up after a second is a new check for the chart.
  front = await startFront({ STATUS_CACHE_TTL: '1' });
  browser = await launchBrowser();
}, 60_000);

afterAll(() =>
  tearDown([
    ['browser', browser && (() => browser.close())],
    ['service', front && (() => front.close())],
    ['good server', good && (() => good.close())],
    ['hostile server', hostile && (() => hostile.close())],
    ['dark MOTD server', darkMotd && (() => darkMotd.close())],
    ['silent server', silent && (() => silent.close())],
  ]),
);

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
    // Once the card's image has loaded or failed, any handler a server text could have planted has run.
    await o.page.waitForFunction(() => Array.from(document.querySelectorAll<HTMLImageElement>('.card img')).every((img) => img.complete));
    await settled(o);
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

  it('an invalid address shows the API\'s own reason in a role="alert" region, typed or loaded, without a request or a console error', async () => {
    /** What the API answers for `address`: the page must say the same, without asking it. */
    const apiMessage = async (address: string) => {
      const response = await fetch(`${front.origin}/api/v1/status/${encodeURIComponent(address)}`);
      expect(response.status).toBe(400);
      return ((await response.json()) as { message: string }).message;
    };
    const statusRequests = (o: Opened) => o.api.filter((e) => e.startsWith('request /api/v1/status/'));

    const o = await open(browser, front, '/');
    await o.page.waitForSelector('#trends-title + div:not([aria-busy])');
    await o.page.waitForSelector('#stats-title + div:not([aria-busy])');
    await expectClean(o);
    const alert = o.page.getByRole('alert');
    const input = o.page.locator('#address');
    for (const typed of ['not a host!', '0x7f.1:25565', 'play.example.com:70000', '[::1']) {
      await input.fill(typed);
      expect(await input.getAttribute('aria-invalid')).toBeNull();
      await input.press('Enter');
      await expect.poll(() => alert.innerText()).toBe(await apiMessage(typed));
      expect(await input.getAttribute('aria-invalid')).toBe('true');
      expect(await o.page.evaluate(() => document.activeElement?.id)).toBe('address');
      // No page of its own: the URL stays, no card, and the service was not asked.
      expect(o.page.url()).toBe(`${front.origin}/`);
      expect(await o.page.locator('.card').count()).toBe(0);
    }
    expect(statusRequests(o)).toEqual([]);
    await expectClean(o);
    await o.close();

    for (const bad of ['0x7f.1', 'not a host', 'play.example.com:0', 'a..b.example']) {
      const direct = await open(browser, front, `/server/${encodeURIComponent(bad)}`);
      await expect.poll(() => direct.page.getByRole('alert').innerText()).toBe(await apiMessage(bad));
      expect(await direct.page.locator('.card').count()).toBe(0);
      expect(await direct.page.locator('#address').inputValue()).toBe(bad);
      expect(statusRequests(direct)).toEqual([]);
      expect(direct.api).toEqual([]);
      await expectClean(direct);
      await direct.close();
    }

    const empty = await open(browser, front, '/');
    await empty.page.locator('#address').press('Enter');
    expect(await empty.page.getByRole('alert').innerText()).toMatch(/Type a server address/);
    expect(empty.page.url()).toBe(`${front.origin}/`);
    await expectClean(empty);
    await empty.close();
  });

  it('the front page lists a server looked up a moment ago under trending servers, with its players and uptime', async () => {
    const o = await open(browser, front, '/');
    await o.page.locator('#address').fill(goodAddress());
    await o.page.locator('#address').press('Enter');
    await expectGoodCard(o);
    await o.page.waitForSelector('svg.chart');
    // Back to the front page by its link (a full page load).
    await o.page.getByRole('link', { name: 'Observer' }).click();
    await o.page.waitForURL(`${front.origin}/`);
    const trends = o.page.locator('ol.trends');
    await trends.waitFor();
    const named = o.page.getByRole('link', { name: goodAddress(), exact: true });
    const item = trends.locator('li', { has: named });
    const link = item.locator(named);
    expect(await link.getAttribute('href')).toBe(`${front.origin}/server/${encodeURIComponent(goodAddress())}`);
    expect(await item.locator('.trend-edition').innerText()).toBe('Java');
    expect(await item.locator('.trend-players').innerText()).toBe('3 / 20 players');
    expect(await item.locator('.trend-uptime').innerText()).toBe('100% up');
    await link.click();
    await expectGoodCard(o);
    await expectClean(o);
    await o.close();
  });

  it('a stale answer (the last success, served while a fresh check runs) carries the stale badge', async () => {
    const fleeting = await startJavaServer({ motd: 'Going away', onlinePlayers: 5, maxPlayers: 10 });
    const path = `/server/${encodeURIComponent(`127.0.0.1:${fleeting.port}`)}`;
    // First look-up: a fresh answer, no badge.
    const first = await open(browser, front, path);
    await first.page.waitForSelector('.card');
    expect(await text(first, '.state')).toBe('Online');
    expect(await first.page.locator('.badge.stale').count()).toBe(0);
    expect(await first.page.locator('.card .note').count()).toBe(0);
    await first.close();
    await fleeting.close();
    // Past the one-second cache: the next look-up gets the last success, marked stale.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const o = await open(browser, front, path);
    await o.page.waitForSelector('.card');
    expect(await text(o, '.state')).toBe('Online');
    expect(await fact(o, 'Players')).toBe('5 / 10');
    const badge = o.page.locator('.fact .badge.stale');
    expect(await badge.innerText()).toBe('stale');
    expect(await badge.isVisible()).toBe(true);
    expect(await o.page.locator('.card .note').innerText()).toBe('This is the last successful answer, served while a fresh check is under way.');
    await o.page.waitForSelector('svg.chart');
    await expectClean(o);
    await o.close();
  });
});

describe('an address the service refuses (public-address guard on, no allowlist)', () => {
  let guarded: Front;
  beforeAll(async () => {
    guarded = await startFront({ TARGET_ALLOWLIST: '' });
  });
  afterAll(() => guarded?.close());

  it('a loopback target: the API\'s 400 shown as an alert; the one console line is Chromium\'s report of that 400', async () => {
    const o = await open(browser, guarded, '/');
    await o.page.locator('#address').fill(goodAddress());
    await o.page.locator('#address').press('Enter');
    const alert = o.page.getByRole('alert');
    const answer = await fetch(`${guarded.origin}/api/v1/status/${goodAddress()}`);
    expect(answer.status).toBe(400);
    const { message } = (await answer.json()) as { message: string };
    await expect.poll(() => alert.innerText()).toBe(message);
    expect(await o.page.locator('.card').count()).toBe(0);
    const path = `/api/v1/status/${encodeURIComponent(goodAddress())}`;
    // The page asked once, learnt the refusal, and asked nothing more (no history).
    expect(o.api.filter((e) => !/\/api\/v1\/(trends|stats)\b/.test(e))).toEqual([`request ${path}`, `response 400 ${path}`]);
    // Chromium reports every HTTP error answer of a fetch as a console error; the page cannot
    // silence it. It is the only one, and it names this very request.
    expect(o.errors).toEqual([`Failed to load resource: the server responded with a status of 400 (Bad Request) (${guarded.origin}${path})`]);
    expect(o.foreign).toEqual([]);
    await o.close();
  });
});

describe('Mojang\'s blocklist (BLOCKLIST_SOURCE, a local file)', () => {
  let listed: Front;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'observer-web-blocklist-'));
    const file = join(dir, 'blockedservers');
    // The vanilla client's hash of the host name (mc.observer.test is 127.0.0.1 in the test zone).
    const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
    writeFileSync(file, `${sha1('*.example.com')}\n${sha1('mc.observer.test')}\n`);
    listed = await startFront({ BLOCKLIST_SOURCE: file });
  });
  afterAll(async () => {
    await listed?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a listed server shows "Blocked by Mojang"; an unlisted one, and a service without a list, show nothing', async () => {
    const named = `mc.observer.test:${good.port}`;
    const blocked = (await (await fetch(`${listed.origin}/api/v1/status/${named}`)).json()) as { blocked: unknown };
    expect(blocked.blocked).toBe(true);
    const o = await open(browser, listed, `/server/${encodeURIComponent(named)}`);
    await o.page.waitForSelector('.card');
    const badge = o.page.locator('.card .badge.blocked');
    expect(await badge.innerText()).toBe('Blocked by Mojang');
    expect(await badge.isVisible()).toBe(true);
    expect(await o.page.locator('.card .note').innerText()).toMatch(/^This server is on Mojang's list of blocked servers/);
    // Plain text: no element inside the badge.
    expect(await badge.evaluate((el) => el.children.length)).toBe(0);
    await expectClean(o);
    await o.close();

    // The same server by its IP is not on the list: `blocked` is false, and nothing is shown.
    const unlisted = (await (await fetch(`${listed.origin}/api/v1/status/${goodAddress()}`)).json()) as { blocked: unknown };
    expect(unlisted.blocked).toBe(false);
    const byIp = await open(browser, listed, `/server/${encodeURIComponent(goodAddress())}`);
    await expectGoodCard(byIp);
    expect(await byIp.page.locator('.badge.blocked').count()).toBe(0);
    expect(await byIp.page.getByText(/blocked/i).count()).toBe(0);
    await byIp.close();

    // Without BLOCKLIST_SOURCE `blocked` is null: nothing either.
    const none = (await (await fetch(`${front.origin}/api/v1/status/${named}`)).json()) as { blocked: unknown };
    expect(none.blocked).toBeNull();
    const unknown = await open(browser, front, `/server/${encodeURIComponent(named)}`);
    await unknown.page.waitForSelector('.card');
    expect(await unknown.page.getByText(/blocked/i).count()).toBe(0);
    await unknown.close();
  });
});

describe('the history of a server looked up a moment ago', () => {
  let slow: Front;
  beforeAll(async () => {
    // Group commits a minute apart: the look-up's check is still queued when the page asks.
    slow = await startFront({}, { writes: { windowMs: 60_000 } });
  });
  afterAll(() => slow?.close());

  it('is asked for once the status is known, and already counts that check: no 404, no console error', async () => {
    const fresh = await startJavaServer({ motd: 'Brand new', onlinePlayers: 4, maxPlayers: 8 });
    try {
      const address = `127.0.0.1:${fresh.port}`;
      const o = await open(browser, slow, `/server/${encodeURIComponent(address)}`);
      await o.page.waitForSelector('svg.chart, .chart-body .empty');
      const chart = o.page.locator('svg.chart');
      expect(await chart.getAttribute('aria-label')).toBe('Uptime 100% over the last 24 hours (1 check, 1 online); players: average 4, peak 4.');
      const status = `/api/v1/status/${encodeURIComponent(address)}`;
      const history = `/api/v1/history/${encodeURIComponent(address)}?range=24h`;
      const order = o.api.filter((e) => e.endsWith(status) || e.endsWith(history));
      expect(order).toEqual([`request ${status}`, `response 200 ${status}`, `request ${history}`, `response 200 ${history}`]);
      await expectClean(o);
      await o.close();
    } finally {
      await fresh.close();
    }
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
    await expect.poll(() => o.page.locator('img.banner-preview').evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth), { timeout: 60_000 }).toBe(800);

    // Badge options: style, label, colours; its own SVG and the shields.io endpoint follow.
    const badge = o.page.locator('.builder-part').nth(2);
    expect(await snippet('badge-url')).toBe(`${front.origin}/api/v1/badge/${address}`);
    expect(await snippet('shields-url')).toBe(`${front.origin}/api/v1/shields/${address}`);
    await badge.getByLabel('Style', { exact: true }).selectOption('for-the-badge');
    await badge.getByLabel('Label', { exact: true }).fill('My server');
    await badge.getByLabel('Online colour', { exact: true }).fill('#07f');
    const badgeUrl = await snippet('badge-url');
    const badgeParams = { style: 'for-the-badge', label: 'My server', onlineColor: '#0077ff' };
    expect(Object.fromEntries(new URL(badgeUrl).searchParams)).toEqual(badgeParams);
    expect(new URL(badgeUrl).pathname).toBe(`/api/v1/badge/${address}`);
    const endpoint = await snippet('shields-url');
    expect(new URL(endpoint).pathname).toBe(`/api/v1/shields/${address}`);
    expect(Object.fromEntries(new URL(endpoint).searchParams)).toEqual(badgeParams);
    const page = `${front.origin}/server/${address}`;
    const alt = `${goodAddress()} server status`;
    expect(await snippet('badge-markdown')).toBe(`[![${alt}](${badgeUrl})](${page})`);
    expect(await snippet('badge-html')).toBe(`<a href="${page}"><img src="${badgeUrl.replace(/&/g, '&amp;')}" alt="${alt}"></a>`);
    const shields = `https://img.shields.io/endpoint?url=${encodeURIComponent(endpoint)}`;
    expect(await snippet('shields-markdown')).toBe(`[![${alt}](${shields})](${page})`);
    expect(await snippet('shields-html')).toBe(`<a href="${page}"><img src="${shields.replace(/&/g, '&amp;')}" alt="${alt}"></a>`);
    await o.page.locator('img.badge-preview').scrollIntoViewIfNeeded();
    await expect.poll(() => o.page.locator('img.badge-preview').getAttribute('src')).toBe(badgeUrl);
    await expect.poll(() => o.page.locator('img.badge-preview').evaluate((el: HTMLImageElement) => el.complete && el.naturalHeight), { timeout: 60_000 }).toBe(28);

    // Every URL a snippet hands out answers 200 with the right content type.
    const urls: Array<[string, RegExp]> = [
      [widgetUrl, /^text\/html/],
      [bannerUrl, /^image\/png$/],
      [badgeUrl, /^image\/svg\+xml/],
      [endpoint, /^application\/json/],
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
    await front.flush();
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
        await settled(o);
        expect(await seriousViolations(o)).toEqual([]);
        expect(await o.page.evaluate(() => document.documentElement.lang)).toBe('en');
        expect(await o.page.title()).not.toBe('');
        await o.close();
      });
    }
  }
});

describe('accessibility of every state of /server/{address} (axe-core)', () => {
  // loading: a target that accepts and never answers holds the look-up (PING_TIMEOUT_MS);
  // error: an address the API refuses (400), shown in the alert region.
  const states = [
    { state: 'loading', address: (scheme: string) => `loading-${scheme}.any.observer.test:${silent.port}`, ready: 'section.panel[aria-busy="true"] .muted' },
    { state: 'online', address: goodAddress, ready: '.card[data-state="online"]' },
    { state: 'online, a MOTD in dark colours', address: () => `127.0.0.1:${darkMotd.port}`, ready: '.card[data-state="online"] .motd span' },
    { state: 'offline', address: () => `127.0.0.1:${closedPort}`, ready: '.card[data-state="offline"]' },
    { state: 'error', address: () => 'a..b', ready: '#alert:not(:empty)' },
  ];
  for (const scheme of ['light', 'dark'] as const) {
    for (const { state, address, ready } of states) {
      it(`${state}, ${scheme} scheme: no serious or critical violation`, async () => {
        const o = await open(browser, front, `/server/${encodeURIComponent(address(scheme))}`, { colorScheme: scheme, bypassCSP: true });
        await o.page.waitForSelector(ready);
        expect(await seriousViolations(o)).toEqual([]);
        await o.close();
      });
    }
  }
});

describe('accessibility of the stale badge, the history chart and the embed builder (axe-core)', () => {
  for (const scheme of ['light', 'dark'] as const) {
    it(`a stale answer with its badge, ${scheme} scheme`, async () => {
      const fleeting = await startJavaServer({ motd: 'Soon stale', onlinePlayers: 2, maxPlayers: 10 });
      const address = `127.0.0.1:${fleeting.port}`;
      expect((await fetch(`${front.origin}/api/v1/status/${address}`)).status).toBe(200);
      await fleeting.close();
      // Past the one-second cache: the next look-up gets the last success, marked stale.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const o = await open(browser, front, `/server/${encodeURIComponent(address)}`, { colorScheme: scheme, bypassCSP: true });
      await o.page.waitForSelector('.fact .badge.stale');
      await o.page.waitForSelector('svg.chart, .chart-body .empty');
      expect(await seriousViolations(o)).toEqual([]);
      await o.close();
    });

    it(`the history chart loading, then drawn, ${scheme} scheme`, async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      // The history answer is held back until the loading state has been checked.
      const o = await open(browser, front, `/server/${encodeURIComponent(goodAddress())}`, { colorScheme: scheme, bypassCSP: true }, async (page) => {
        await page.route('**/api/v1/history/**', async (route) => {
          await held;
          await route.continue();
        });
      });
      await o.page.waitForSelector('.card[data-state="online"]');
      await o.page.waitForSelector('.chart-body .muted');
      expect(await seriousViolations(o)).toEqual([]);
      release();
      await o.page.waitForSelector('svg.chart');
      expect(await seriousViolations(o)).toEqual([]);
      await o.close();
    });

    it(`the embed builder with its previews (dark and light widget, banner, badge) and an invalid colour, ${scheme} scheme`, async () => {
      const o = await open(browser, front, `/server/${encodeURIComponent(goodAddress())}`, { colorScheme: scheme, bypassCSP: true });
      await o.page.waitForSelector('.builder');
      await o.page.locator('img.banner-preview').scrollIntoViewIfNeeded();
      await expect.poll(() => o.page.locator('img.banner-preview').evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0), { timeout: 60_000 }).toBe(true);
      await o.page.locator('img.badge-preview').scrollIntoViewIfNeeded();
      await expect.poll(() => o.page.locator('img.badge-preview').evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0), { timeout: 60_000 }).toBe(true);
      const frame = o.page.frameLocator('iframe.widget-preview');
      await frame.locator('#w').waitFor();
      expect(await seriousViolations(o, true)).toEqual([]);
      const widget = o.page.locator('.builder-part').nth(0);
      await widget.getByLabel('Theme', { exact: true }).selectOption('light');
      await expect.poll(() => o.page.locator('iframe.widget-preview').getAttribute('src')).toContain('theme=light');
      await frame.locator('#w').waitFor();
      await settled(o);
      expect(await seriousViolations(o, true)).toEqual([]);
      // A colour field flagged invalid, with its hint.
      await widget.getByLabel('Text', { exact: true }).fill('#12345');
      await expect.poll(() => widget.getByLabel('Text', { exact: true }).getAttribute('aria-invalid')).toBe('true');
      expect(await seriousViolations(o, true)).toEqual([]);
      await o.close();
    });
  }
});

/** Brings each lazy preview of the embed builder into view and waits until it has loaded. */
async function previewsLoaded(o: Opened): Promise<void> {
  await o.page.waitForSelector('.builder');
  for (const image of ['img.banner-preview', 'img.badge-preview']) {
    await o.page.locator(image).scrollIntoViewIfNeeded();
    await expect.poll(() => o.page.locator(image).evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0), { timeout: 60_000 }).toBe(true);
  }
  await o.page.locator('iframe.widget-preview').scrollIntoViewIfNeeded();
  await o.page.frameLocator('iframe.widget-preview').locator('#w').waitFor();
}

describe('page weight', () => {
  for (const path of ['/', 'server']) {
    it(`one view of ${path === '/' ? '/' : '/server/…'} moves at most 250 KiB, scrolled to the end; the app's JS is under 50 KiB gzipped`, async () => {
      const o = await open(browser, front, path === '/' ? '/' : `/server/${encodeURIComponent(goodAddress())}`);
      await settled(o);
      // Every lazy preview brought into view and loaded, then the page scrolled to its end.
      if (path !== '/') await previewsLoaded(o);
      await o.page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
      await settled(o);
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
