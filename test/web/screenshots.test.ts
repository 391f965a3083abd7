/// <reference lib="dom" />
/**
 * Reference screenshots of / and /server/… in the light and dark schemes, whole pages, with
 * data: rendered by real Chromium from a fresh service and real Minecraft servers on loopback,
 * compared with a pixel tolerance. A change in the front's look shows up in review as a
 * changed file under test/fixtures/web/ (regenerate with UPDATE_REFERENCES=1).
 *
 * The data is made by real look-ups on a fixed clock: the featured server checked every ten
 * minutes for 24 hours (players rising and falling, an outage of about 80 minutes), a few
 * others looked up in the last hour (trends, figures), one offline. The service and the
 * browser share that clock, so check times, chart buckets and dates are the same every run.
 * What still varies (loopback ports, the origin in the snippets, latency) is set to fixed
 * text; the live widget and banner previews (latency drawn in them) are masked.
 */
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareWithReference } from '../render/support.js';
import { FakeClock } from '../support/clock.js';
import { freePort, freeUdpPort } from '../../scripts/ports.mjs';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { expectClean, launchBrowser, open, startFront, tearDown, type Front } from './harness.js';

const DIR = fileURLToPath(new URL('../fixtures/web/', import.meta.url));
const MINUTE = 60_000;
/**
 * "Now" for the service and the browser: on a 10-minute edge (the last 24-hour bucket starts
 * now), and 23 h 50 min into its UTC day, so that every look-up falls on one day of the
 * client-hash secret (one client, not one per day, in the trend scores).
 */
const NOW = Date.parse('2026-06-01T23:50:00.000Z');
const FEATURED_MOTD = '§aA §lfriendly§r §6server\n§bSecond line';

let browser: Browser;
let front: Front;
let featured: RunningJavaServer;
const others: Array<{ close(): Promise<void> }> = [];
/** Loopback address → the name shown in the screenshots. */
const names = new Map<string, string>();

const startFeatured = (port = 0) =>
  startJavaServer({
    port,
    motd: FEATURED_MOTD,
    onlinePlayers: 3,
    maxPlayers: 20,
    sample: [
      { name: 'Steve', id: '8667ba71-b85a-4004-af54-457a9734eed7' },
      { name: 'Alex', id: 'ec561538-f3fd-461d-aff5-086b22154bce' },
    ],
    extra: { version: { name: '1.21.4', protocol: 769 } },
  });

/** Players over the day: a smooth day curve with a little deterministic jitter, 3 to 16. */
const playersAt = (i: number) => Math.max(0, Math.round(9.5 - 6 * Math.cos((2 * Math.PI * (i + 24)) / 144)) + ((i * 7) % 5) - 2);

beforeAll(async () => {
  const clock = new FakeClock(NOW - 143 * 10 * MINUTE);
  front = await startFront({}, { clock });
  const at = (time: number) => clock.advance(time - clock.now());
  const lookUp = async (address: string, query = '') => {
    const response = await fetch(`${front.origin}/api/v1/status/${address}${query}`);
    expect(response.status, address).toBe(200);
    return (await response.json()) as { online: boolean };
  };

  featured = await startFeatured();
  const address = `127.0.0.1:${featured.port}`;
  names.set(address, 'play.example.com');
  // 24 hours, one check per 10-minute bucket; bucket 40 sees the server go down (a part-online
  // bucket), 41–47 find it down, and it is back from 48 on.
  for (let i = 0; i < 144; i++) {
    const time = NOW - (143 - i) * 10 * MINUTE;
    if (i === 48) featured = await startFeatured(featured.port);
    at(time);
    featured.setOnlinePlayers(playersAt(i));
    if (i <= 40 || i >= 48) expect((await lookUp(address)).online).toBe(true);
    if (i === 40) {
      await featured.close();
      // Past the cache and its 5 minutes of stale-while-revalidate: a fresh, failing ping.
      at(time + 7 * MINUTE);
    }
    if (i >= 40 && i < 48) expect((await lookUp(address)).online).toBe(false);
  }

  // Servers looked up in the last hour: the trends (ranked by players, all with one client).
  const skyblock = await startJavaServer({ motd: 'Skyblock', onlinePlayers: 42, maxPlayers: 100 });
  const creative = await startJavaServer({ motd: 'Creative', onlinePlayers: 17, maxPlayers: 50 });
  const pocketPort = await freeUdpPort();
  const pocket: RunningBedrockServer = await startBedrockServer({ port: pocketPort, playersOnline: 9, playersMax: 40 });
  others.push(skyblock, creative, pocket);
  names.set(`127.0.0.1:${skyblock.port}`, 'skyblock.example.net');
  names.set(`127.0.0.1:${creative.port}`, 'creative.example.org');
  names.set(`127.0.0.1:${pocketPort}`, 'pocket.example.com');
  // One that was down half an hour ago and is up now: 50% uptime.
  const latePort = await freePort();
  names.set(`127.0.0.1:${latePort}`, 'minigames.example.net');
  at(NOW - 50 * MINUTE);
  expect((await lookUp(`127.0.0.1:${latePort}`)).online).toBe(false);
  const late = await startJavaServer({ port: latePort, motd: 'Minigames', onlinePlayers: 2, maxPlayers: 24 });
  others.push(late);
  at(NOW - 25 * MINUTE);
  await lookUp(`127.0.0.1:${skyblock.port}`);
  await lookUp(`127.0.0.1:${pocketPort}`, '?bedrock=true');
  at(NOW - 20 * MINUTE);
  expect((await lookUp(`127.0.0.1:${latePort}`)).online).toBe(true);
  await lookUp(`127.0.0.1:${creative.port}`);
  // And one that is offline.
  at(NOW - 5 * MINUTE);
  expect((await lookUp(`127.0.0.1:${await freePort()}`)).online).toBe(false);
  at(NOW);

  await front.flush();
  // The figures are computed once here and kept (they are cached a minute of the fixed clock),
  // so every screenshot shows the same ones, whichever ran first.
  const stats = (await (await fetch(`${front.origin}/api/v1/stats`)).json()) as { onlineServers: number; offlineServers: number };
  expect(stats).toMatchObject({ onlineServers: 5, offlineServers: 1 });
  browser = await launchBrowser();
}, 120_000);

afterAll(() =>
  tearDown([
    ['browser', browser && (() => browser.close())],
    ['service', front && (() => front.close())],
    ['featured server', featured && (() => featured.close())],
    ...others.map((server, i): [string, () => Promise<unknown>] => [`server ${i}`, () => server.close()]),
  ]),
);

/** The browser's clock is the service's: "checked now", the chart's dates. */
const fixedClock = (page: Page) => page.clock.setFixedTime(NOW);

/** Replaces every loopback address (and the origin) in the page's text and fields with its fixed name. */
async function freeze(page: Page): Promise<void> {
  await page.evaluate(
    ({ origin, names }) => {
      const swap = (text: string) => {
        // The shields.io snippets hold the origin and the address encoded once more.
        let out = text.split(encodeURIComponent(origin)).join(encodeURIComponent('https://observer.example'));
        out = out.split(origin).join('https://observer.example');
        for (const [address, name] of names) {
          out = out.split(encodeURIComponent(encodeURIComponent(address))).join(name);
          out = out.split(encodeURIComponent(address)).join(name).split(address).join(name);
        }
        return out;
      };
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) node.nodeValue = swap(node.nodeValue ?? '');
      document.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('input[type="text"], textarea').forEach((field) => {
        field.value = swap(field.value);
      });
    },
    { origin: front.origin, names: [...names] },
  );
}

async function shoot(page: Page, scheme: 'light' | 'dark', mask: string[] = []): Promise<Buffer> {
  await page.evaluate(() => document.fonts.ready);
  return page.screenshot({
    fullPage: true,
    animations: 'disabled',
    caret: 'hide',
    mask: mask.map((selector) => page.locator(selector)),
    maskColor: scheme === 'light' ? '#d1d5db' : '#343a46',
  });
}

describe('web front reference screenshots (whole pages, with data)', () => {
  for (const scheme of ['light', 'dark'] as const) {
    it(`/ in ${scheme}`, async () => {
      const o = await open(browser, front, '/', { colorScheme: scheme, reducedMotion: 'reduce' }, fixedClock);
      await o.page.waitForSelector('#stats-title + div:not([aria-busy])');
      await o.page.waitForSelector('#trends-title + div:not([aria-busy])');
      // The data is there: five servers online, four ranked by players, Bedrock among them.
      expect(await o.page.locator('ol.trends li').count()).toBe(5);
      expect(await o.page.locator('ol.trends .trend-players').allInnerTexts()).toEqual([
        '42 / 100 players',
        '17 / 50 players',
        '9 / 40 players',
        `${playersAt(143)} / 20 players`,
        '2 / 24 players',
      ]);
      expect(await o.page.locator('.figure dd').first().innerText()).toBe('5');
      await freeze(o.page);
      expect(await o.page.locator('ol.trends .trend-name').allInnerTexts()).toEqual([
        'skyblock.example.net',
        'creative.example.org',
        'pocket.example.com',
        'play.example.com',
        'minigames.example.net',
      ]);
      const shot = await shoot(o.page, scheme);
      await expectClean(o);
      await o.close();
      expect(await compareWithReference(`home-${scheme}.png`, shot, 48, DIR)).toBeLessThan(0.02);
    });
  }

  for (const scheme of ['light', 'dark'] as const) {
    it(`/server/… in ${scheme}`, async () => {
      const o = await open(browser, front, `/server/127.0.0.1:${featured.port}`, { colorScheme: scheme, reducedMotion: 'reduce' }, fixedClock);
      await o.page.waitForSelector('svg.chart');
      // The previews get their size and source after the builder's debounce.
      await o.page.waitForSelector('iframe.widget-preview[src]');
      await o.page.waitForSelector('img.banner-preview[src]');
      // The badge preview is lazy: brought into view, it loads (the screenshot shows the whole page).
      await o.page.locator('img.badge-preview[src]').scrollIntoViewIfNeeded();
      await expect.poll(() => o.page.locator('img.badge-preview').evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0), { timeout: 60_000 }).toBe(true);
      await o.page.evaluate(() => window.scrollTo(0, 0));
      expect(await o.page.locator('.fact time').innerText()).toBe('now');
      expect(await o.page.locator('svg.chart').getAttribute('aria-label')).toMatch(/^Uptime 94\.48% over the last 24 hours \(145 checks, 137 online\); players: average [\d.]+, peak \d+\.$/);
      await freeze(o.page);
      await o.page.evaluate(() => {
        const fact = (term: string) =>
          Array.from(document.querySelectorAll('.fact')).find((f) => f.querySelector('dt')?.textContent === term)?.querySelector('dd');
        fact('Latency')!.textContent = '12 ms';
        fact('Address')!.textContent = 'play.example.com:25565';
      });
      expect(await o.page.locator('.server-name').innerText()).toBe('play.example.com');
      const shot = await shoot(o.page, scheme, ['iframe.widget-preview', 'img.banner-preview']);
      await expectClean(o);
      await o.close();
      expect(await compareWithReference(`server-${scheme}.png`, shot, 48, DIR)).toBeLessThan(0.02);
    });
  }
});
