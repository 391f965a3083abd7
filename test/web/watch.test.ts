/// <reference lib="dom" />
/**
 * "Watch this server" in real Chromium against the whole service, a real Minecraft server and
 * a webhook receiver on loopback: create a watch from the form, read the tokens, verify by
 * MOTD, send a test delivery; axe-core finds no serious violation in any state.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { launchBrowser, open, seriousViolations, startFront, tearDown, type Front } from './harness.js';

let browser: Browser;
let front: Front;
let server: RunningJavaServer;
let receiver: WebhookReceiver;

beforeAll(async () => {
  server = await startJavaServer({ motd: 'Watch me', onlinePlayers: 2 });
  receiver = await startWebhookReceiver();
  front = await startFront({ STATUS_CACHE_TTL: '1' });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await tearDown([
    ['browser', browser ? () => browser.close() : undefined],
    ['front', front ? () => front.close() : undefined],
    ['server', server ? () => server.close() : undefined],
    ['receiver', receiver ? () => receiver.close() : undefined],
  ]);
});

describe('watch this server', () => {
  for (const scheme of ['light', 'dark'] as const) {
    it(`creates, verifies and tests a watch, ${scheme} scheme, without a serious axe violation`, async () => {
      const o = await open(browser, front, `/server/${encodeURIComponent(`127.0.0.1:${server.port}`)}`, { colorScheme: scheme, bypassCSP: true });
      const { page } = o;
      await page.waitForSelector('.card[data-state="online"]');
      await page.waitForSelector('#watch-title');
      expect(await seriousViolations(o)).toEqual([]);

      // A private webhook address is refused with the API's sentence.
      await page.selectOption('#watch-kind', 'json');
      await page.fill('#watch-url', 'http://localhost:1/hook');
      await page.click('.watch-form button[type=submit]');
      await page.waitForSelector('#watch-url[aria-invalid="true"]');
      expect(await page.textContent('.watch-status')).toContain('non-public');

      await page.fill('#watch-url', receiver.url(`/${scheme}`));
      await page.click('.watch-form button[type=submit]');
      await page.waitForSelector('.watch-created');
      const token = await page.inputValue('input[id^="watch-secret"] >> nth=0');
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const verification = await page.inputValue('input[id^="watch-secret"] >> nth=2');
      expect(verification).toMatch(/^observer-[0-9a-f]{20}$/);
      expect(await page.textContent('.watch-verified')).toContain('Not verified');
      expect(await page.isDisabled('.watch-actions button >> nth=1')).toBe(true);
      expect(await seriousViolations(o)).toEqual([]);

      server.setMotd(`Watch me ${verification}`);
      await new Promise((r) => setTimeout(r, 1_100));
      await page.click('.watch-actions button >> nth=0');
      await page.waitForSelector('.watch-verified[data-verified="true"]');
      await page.click('.watch-actions button >> nth=1');
      await page.waitForFunction(() => document.querySelector('.watch-status')?.textContent?.startsWith('Test delivered'));
      const hooks = receiver.requests.filter((r) => r.path === `/${scheme}`);
      expect(hooks).toHaveLength(1);
      expect(JSON.parse(hooks[0]!.body)).toMatchObject({ event: 'test', address: `127.0.0.1:${server.port}` });
      expect(await seriousViolations(o)).toEqual([]);
      // The one console error is Chromium's line for the refused webhook's 400.
      expect(o.errors).toEqual([expect.stringMatching(/status of 400 .*\/api\/v1\/watches\)$/)]);
      expect(o.foreign).toEqual([]);
      server.setMotd('Watch me');

      // The token shown manages the watch through the API.
      const id = String(hooks[0]!.headers['webhook-id']).split('_')[0];
      const api = await fetch(`${front.origin}/api/v1/watches/${id}`, { headers: { authorization: `Bearer ${token}` } });
      expect(api.status).toBe(200);
      await o.close();
    }, 60_000);
  }
});
