/// <reference lib="dom" />
/**
 * Reference screenshots of / and /server/… in the light and dark schemes, rendered by real
 * Chromium from a fresh service and a real Minecraft server on loopback, compared with a pixel
 * tolerance: a change in the front's look shows up in review as a changed file under
 * test/fixtures/web/ (regenerate with UPDATE_REFERENCES=1). Text that differs from run to
 * run (the server's port, latency, check time, dates) is set to fixed strings first.
 */
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareWithReference } from '../render/support.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { expectClean, launchBrowser, open, startFront, type Front } from './harness.js';

const DIR = fileURLToPath(new URL('../fixtures/web/', import.meta.url));
let browser: Browser;
let front: Front;
let server: RunningJavaServer;

beforeAll(async () => {
  server = await startJavaServer({
    motd: '§aA §lfriendly§r §6server\n§bSecond line',
    onlinePlayers: 3,
    maxPlayers: 20,
    sample: [
      { name: 'Steve', id: '8667ba71-b85a-4004-af54-457a9734eed7' },
      { name: 'Alex', id: 'ec561538-f3fd-461d-aff5-086b22154bce' },
    ],
    extra: { version: { name: '1.21.4', protocol: 769 } },
  });
  front = await startFront();
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await front?.close();
  await server?.close();
});

describe('web front reference screenshots', () => {
  for (const scheme of ['light', 'dark'] as const) {
    it(`/ in ${scheme}`, async () => {
      const o = await open(browser, front, '/', { colorScheme: scheme, reducedMotion: 'reduce' });
      await o.page.waitForSelector('#stats-title + div:not([aria-busy])');
      await o.page.waitForSelector('#trends-title + div:not([aria-busy])');
      await o.page.evaluate(() => document.fonts.ready);
      const shot = await o.page.screenshot({ animations: 'disabled', caret: 'hide' });
      await expectClean(o);
      await o.close();
      expect(await compareWithReference(`home-${scheme}.png`, shot, 48, DIR)).toBeLessThan(0.02);
    });
  }

  for (const scheme of ['light', 'dark'] as const) {
    it(`/server/… in ${scheme}`, async () => {
      const o = await open(browser, front, `/server/127.0.0.1:${server.port}`, { colorScheme: scheme, reducedMotion: 'reduce' });
      await o.page.waitForSelector('svg.chart');
      await o.page.evaluate(() => document.fonts.ready);
      await o.page.evaluate(() => {
        const set = (selector: string, text: string) => document.querySelectorAll(selector).forEach((el) => (el.textContent = text));
        const fact = (term: string) =>
          Array.from(document.querySelectorAll('.fact')).find((f) => f.querySelector('dt')?.textContent === term)?.querySelector('dd');
        set('.server-name', '127.0.0.1:25565');
        (document.getElementById('address') as HTMLInputElement).value = '127.0.0.1:25565';
        fact('Address')!.textContent = '127.0.0.1:25565';
        fact('Latency')!.textContent = '12 ms';
        set('.fact time', 'now');
        set('.chart .tick', 'Jun 1, 12:00 PM UTC');
      });
      const shot = await o.page.screenshot({ animations: 'disabled', caret: 'hide' });
      await expectClean(o);
      await o.close();
      expect(await compareWithReference(`server-${scheme}.png`, shot, 48, DIR)).toBeLessThan(0.02);
    });
  }
});
