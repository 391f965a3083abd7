/// <reference lib="dom" />
/**
 * Reference screenshots of the demo widget, each size in both themes, rendered by real
 * Chromium and compared with a pixel tolerance: a change in the widget's look shows up in
 * review as a changed file under test/fixtures/widget/ (regenerate with UPDATE_REFERENCES=1).
 */
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_HEIGHTS, RECOMMENDED_WIDTHS } from '../../src/render/widget/index.js';
import { createStatusService } from '../../src/status/index.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';
import { compareWithReference } from '../render/support.js';

const DIR = fileURLToPath(new URL('../fixtures/widget/', import.meta.url));
let browser: Browser;
let app: Awaited<ReturnType<typeof buildApp>>;
let origin: string;

beforeAll(async () => {
  const config = testConfig({ RATE_LIMIT_MEDIA: '100000' });
  app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--disable-sync', '--no-first-run', '--font-render-hinting=none'],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

/** The demo in each size and theme, plus one page with every effect turned on. */
const CASES: Array<{ name: string; size: 'small' | 'normal' | 'large'; query: string }> = [
  ...(['small', 'normal', 'large'] as const).flatMap((size) =>
    (['dark', 'light'] as const).map((theme) => ({ name: `${size}-${theme}`, size, query: `theme=${theme}` })),
  ),
  {
    name: 'normal-effects',
    size: 'normal',
    query: 'statusIndicator=badge&gradientBg=true&glowEffect=true&boxShadow=true&playerBarStyle=striped&showProtocol=true&showBorder=true',
  },
];

describe('widget reference screenshots', () => {
  for (const { name, size, query } of CASES) {
    it(name, async () => {
      const page = await browser.newPage({
        viewport: { width: RECOMMENDED_WIDTHS[size], height: DEFAULT_HEIGHTS[size] },
        deviceScaleFactor: 1,
        reducedMotion: 'reduce',
      });
      // Inter, served by the service: the system font would differ from machine to machine.
      await page.goto(`${origin}/api/v1/widget/${size}/demo?font=Inter&${query}`);
      await page.evaluate(() => document.fonts.ready);
      const shot = await page.screenshot({ animations: 'disabled' });
      await page.close();
      expect(await compareWithReference(`${name}.png`, shot, 48, DIR)).toBeLessThan(0.02);
    });
  }
});
