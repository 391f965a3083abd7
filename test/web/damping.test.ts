/// <reference lib="dom" />
/**
 * The server page while flap damping holds (docs/api.md, "Flap damping"), in real headless
 * Chromium: a real server answers, is stopped, and its card says since when it has not answered.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../support/clock.js';
import { startJavaServer } from '../support/minecraft.js';
import { expectClean, launchBrowser, open, startFront, tearDown, type Front } from './harness.js';

let browser: Browser;
let front: Front;
const clock = new FakeClock(Date.now());

beforeAll(async () => {
  front = await startFront({ DAMPING_FAILURES: '3' }, { clock });
  browser = await launchBrowser();
}, 60_000);

afterAll(() =>
  tearDown([
    ['browser', browser && (() => browser.close())],
    ['service', front && (() => front.close())],
  ]),
);

it('a server that stopped answering after a success: its last success, and "Not answering since …"', async () => {
  const server = await startJavaServer({ motd: 'flapping', onlinePlayers: 6 });
  const address = `127.0.0.1:${server.port}`;
  const api = `${front.origin}/api/v1/status/${address}`;
  expect(((await (await fetch(api)).json()) as { online: boolean }).online).toBe(true);
  await server.close();
  clock.advance(61_000);
  // The stale answer's refresh fails: the failure is the first of a streak.
  let failing: { since: string } | undefined;
  for (let i = 0; i < 200 && failing === undefined; i += 1) {
    failing = ((await (await fetch(api)).json()) as { failing?: { since: string } }).failing;
    if (failing === undefined) await new Promise((r) => setTimeout(r, 10));
  }
  expect(failing).toBeDefined();

  const o = await open(browser, front, `/server/${encodeURIComponent(address)}`);
  await o.page.waitForSelector('.card');
  expect(await o.page.locator('.card').getAttribute('data-state')).toBe('online');
  const note = o.page.locator('.note.failing');
  expect(await note.innerText()).toMatch(/^Not answering since .+ \(connection refused\): this is its last successful answer\.$/);
  expect(await note.locator('time').getAttribute('datetime')).toBe(failing!.since);
  expect(await o.page.locator('.fact', { has: o.page.locator('dt', { hasText: 'Players' }) }).locator('dd').innerText()).toBe('6 / 20');
  await expectClean(o);
  await o.close();
});
